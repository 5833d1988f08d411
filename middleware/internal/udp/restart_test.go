package udp_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// epochLog records, per publisher epoch, what a receiver delivered.
type epochLog struct {
	mu    sync.Mutex
	first map[uint32]time.Time
	got   map[uint32]uint64 // deliveries
	last  map[uint32]uint64 // last seq delivered
	lost  map[uint32]uint64
	err   error
}

func (l *epochLog) add(d *udp.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.first[d.Epoch]; !ok {
		l.first[d.Epoch] = time.Now()
	}
	if err := check(d.Payload, d.Seq); err != nil && l.err == nil {
		l.err = err
	}
	if d.Seq != l.last[d.Epoch]+1 && l.err == nil {
		l.err = fmt.Errorf("epoch %#x: seq %d after %d (lost %d)", d.Epoch, d.Seq, l.last[d.Epoch], d.Lost)
	}
	l.got[d.Epoch]++
	l.last[d.Epoch] = d.Seq
	l.lost[d.Epoch] += d.Lost
}

// TestPublisherRestartsResume restarts a reliable publisher (new socket,
// new epoch) more times in a row than the receiver tracks writer streams,
// while one subscriber stays up: every new epoch is delivered from its
// first message within 1.5 s of the restart (half of WriterTimeout), complete and in order, and
// no publisher drops the live subscriber or times out a send. Before the
// fix the restart that found the writer table full (MaxWriters old epochs,
// all silent for less than WriterTimeout) was ignored for up to 3 s, and
// its publisher dropped the subscriber as dead after SubscriberTimeout.
func TestPublisherRestartsResume(t *testing.T) {
	const (
		topic    = 48
		restarts = 9 // > 2 × MaxWriters: the table fills twice over
		msgs     = 100
		// Half the default WriterTimeout (3 s): the bug this guards
		// against waited out the whole timeout, and a loaded 2-core host
		// was seen to stall a thread for up to ~1 s, which must not fail it.
		bound = 1500 * time.Millisecond
	)
	rs := openSock(t, lo)
	rcv, err := udp.NewReceiver(rs, udp.ReceiverConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	l := &epochLog{first: map[uint32]time.Time{}, got: map[uint32]uint64{}, last: map[uint32]uint64{}, lost: map[uint32]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rcv.Next(ctx, l.add) == nil {
		}
	}()
	defer func() { cancel(); <-done }()

	p := make([]byte, 100)
	var worst time.Duration
	for i := range restarts + 1 {
		snd, err := udp.NewSender(openSock(t, lo), udp.SenderConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: 16,
			Peers: []netip.AddrPort{rs.LocalAddr()}})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		ep := snd.Epoch()
		// About 1 kHz, as the startup suite's publisher: the pacing is the
		// workload, not synchronisation.
		tick := time.NewTicker(time.Millisecond)
		var sendErr error
		for s := uint64(1); s <= msgs && sendErr == nil; s++ {
			<-tick.C
			fill(p, s)
			sendErr = snd.Send(p)
		}
		tick.Stop()
		deadline := time.Now().Add(5 * time.Second)
		for {
			l.mu.Lock()
			n := l.got[ep]
			l.mu.Unlock()
			if n >= msgs || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		st := snd.Stats()
		snd.Close()
		l.mu.Lock()
		first, seen := l.first[ep]
		got, lost, lerr := l.got[ep], l.lost[ep], l.err
		l.mu.Unlock()
		resume := first.Sub(t0)
		if seen {
			worst = max(worst, resume)
		}
		t.Logf("start %d (epoch %#x): first delivery after %v, %d/%d delivered", i, ep, resume.Round(time.Microsecond), got, msgs)
		switch {
		case sendErr != nil:
			t.Fatalf("start %d: send failed: %v (sender stats %+v, receiver %+v)", i, sendErr, st, rcv.Stats())
		case !seen || resume > bound:
			t.Fatalf("start %d: resumed after %v (seen %v), want ≤ %v; receiver %+v", i, resume, seen, bound, rcv.Stats())
		case got != msgs || lost != 0 || lerr != nil:
			t.Fatalf("start %d: delivered %d/%d, lost %d, err %v", i, got, msgs, lost, lerr)
		case st.DroppedSubs != 0 || st.Timeouts != 0:
			t.Fatalf("start %d: publisher dropped %d subscribers, %d send timeouts", i, st.DroppedSubs, st.Timeouts)
		}
	}
	if rs := rcv.Stats(); rs.Epochs != restarts || rs.UnknownWriter != 0 || rs.Lost != 0 {
		t.Fatalf("receiver stats %+v, want %d epoch changes, no unknown writer, no loss", rs, restarts)
	}
	t.Logf("%d restarts: worst resumption %v", restarts, worst.Round(time.Microsecond))
}
