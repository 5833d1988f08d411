package middleware_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// fuzzContract: 4 slots of up to 256 bytes, keep-last 4. Its layout:
// header, publisher block, table and ring below 4096, then 21 slots of
// 320 bytes (64-byte header with the seqlock word first).
var fuzzContract = middleware.Contract{Topic: "fuzz/live", MaxPayload: 256, Slots: 4, Depth: 4, Transport: middleware.TransportShm}

const (
	fuzzSlotsOff = 4096
	fuzzSlotSize = 320
	fuzzPool     = 4 + 16 + 1
	fuzzTotal    = fuzzSlotsOff + fuzzPool*fuzzSlotSize
)

// FuzzLiveSegment overwrites a live segment under a running publisher and
// subscriber (one process, two goroutines, one mapping). data[0] picks
// the QoS (bit 0 Reliable) and wait strategy (bit 1 spin); the rest is a
// list of operations, applied one at a time while messages flow:
//
//	op < 0xc0: write 1 + op%8 bytes at offset (next 2 bytes) % 4096: the
//	           header, publisher block, subscriber table and ring
//	op < 0xf0: write 8 bytes over the seqlock word of slot (next byte) % 21
//	else:      truncate the file to (next 2 bytes) % its size
//
// Slot headers past the seqlock and payloads are not mutated: they are
// message data, which whoever can write the segment can forge (see
// docs/security.md). Whatever the operations, both ends must return in
// bounded time, nothing may crash, and no payload that is torn (mixing
// two messages) may reach the callback unless Next returns ErrCorrupt
// right after it; an error from either end must be ErrCorrupt naming
// the file (or the publisher's ErrTimeout on a Reliable topic).
func FuzzLiveSegment(f *testing.F) {
	le := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	w := func(off uint16, b []byte) []byte { // a write op
		return append([]byte{0xb8 + byte(len(b)-1), byte(off >> 8), byte(off)}, b...)
	}
	f.Add(append([]byte{0}, w(320, le(0x0123456789abfffe))...))                           // head word: slot out of the pool
	f.Add(append([]byte{2}, w(320, le(0x0123456789ab0003))...))                           // head word: far ahead (spin)
	f.Add(append([]byte{0}, w(2560, le(0xfedcba9876543210))...))                          // ring entry
	f.Add(append([]byte{1}, append(w(512, le(0x87a4affda46613b7)), w(528, le(0))...)...)) // our state and hold (reliable)
	f.Add(append([]byte{0}, w(332, []byte{0xff, 0, 0, 0})...))                            // high-water mark
	f.Add(append([]byte{1}, w(256, le(7))...))                                            // publisher owner word
	f.Add([]byte{0, 0xe0, 3, 0xe0, 4, 0xe0, 5})                                           // slot seqlock words
	f.Add([]byte{0, 0xf0, 0, 0})                                                          // truncate to 0
	f.Add([]byte{2, 0xf0, 0x10, 0x00})                                                    // truncate to 4096 (spin)
	f.Add([]byte{1, 0xf0, 0x1a, 0x00})                                                    // truncate inside the slots
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 256 {
			return
		}
		fuzzLive(t, data)
	})
}

func fuzzLive(t *testing.T, data []byte) {
	c := fuzzContract
	if data[0]&1 != 0 {
		c.Reliability = middleware.Reliable
	}
	so := &middleware.SubscriberOptions{Wait: middleware.WaitFutex}
	if data[0]&2 != 0 {
		so.Wait = middleware.WaitSpin
	}
	d := testDomain(t)
	path := middleware.SegmentPath("", d, c.Topic)
	defer middleware.RemoveSegment(path)
	n, err := middleware.OpenNode("fuzz", &middleware.NodeOptions{Domain: d})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	sub, pub := openPairWith(t, n, c, so, c, &middleware.PublisherOptions{SendTimeout: 50 * time.Millisecond})
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var delivered, torn atomic.Int64
	subErr := make(chan error, 1)
	go func() {
		for {
			bad := false
			err := sub.Next(ctx, func(m *middleware.Message) {
				if tag, ok := checkPattern(m.Payload); !ok || tag != m.Header.Seq {
					bad = true
				}
			})
			if bad && !errors.Is(err, middleware.ErrCorrupt) {
				torn.Add(1)
			}
			if err != nil {
				subErr <- err
				return
			}
			delivered.Add(1)
		}
	}()
	var stop atomic.Bool
	pubErr := make(chan error, 1)
	go func() {
		buf := make([]byte, c.MaxPayload)
		for i := 1; ; i++ {
			if stop.Load() {
				pubErr <- nil
				return
			}
			sz := 8 + i*37%(c.MaxPayload-8)
			fillPattern(buf[:sz], uint64(i))
			err := pub.Send(buf[:sz])
			if errors.Is(err, middleware.ErrTimeout) {
				i-- // Reliable, the subscriber failed or stalls: Seq did not advance
				continue
			}
			if err != nil {
				pubErr <- err
				return
			}
			if i%8 == 0 {
				time.Sleep(20 * time.Microsecond) // pace, so the subscriber keeps up
			}
		}
	}()
	// progress waits (polling, with a deadline) until the subscriber has
	// delivered more than k messages or ended.
	var subDone error
	progress := func(k int64, within time.Duration) {
		for end := time.Now().Add(within); time.Now().Before(end) && delivered.Load() <= k; {
			select {
			case subDone = <-subErr:
				subErr <- subDone
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
	progress(20, 3*time.Second)
	for ops := data[1:]; len(ops) > 0; {
		op := ops[0]
		arg := func(i int) int {
			if i < len(ops) {
				return int(ops[i])
			}
			return 0
		}
		switch {
		case op < 0xc0:
			ln := 1 + int(op%8)
			off := (arg(1)<<8 | arg(2)) % fuzzSlotsOff
			b := make([]byte, ln)
			for i := range b {
				b[i] = byte(arg(3 + i))
			}
			file.WriteAt(b, int64(off))
			ops = ops[min(len(ops), 3+ln):]
		case op < 0xf0:
			k := arg(1) % fuzzPool
			file.WriteAt([]byte{byte(arg(2)), byte(arg(3)), byte(arg(4)), byte(arg(5)), 0, 0, 0, 0}, int64(fuzzSlotsOff+k*fuzzSlotSize))
			ops = ops[min(len(ops), 6):]
		default:
			file.Truncate(int64((arg(1)<<8 | arg(2)) % fuzzTotal))
			ops = ops[min(len(ops), 3):]
		}
		progress(delivered.Load()+2, 20*time.Millisecond)
	}
	progress(delivered.Load()+50, 200*time.Millisecond)

	cancel()
	stop.Store(true)
	for _, ch := range []struct {
		who string
		c   chan error
	}{{"subscriber", subErr}, {"publisher", pubErr}} {
		select {
		case err := <-ch.c:
			switch {
			case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			case errors.Is(err, middleware.ErrCorrupt) && strings.Contains(err.Error(), path):
			default:
				t.Errorf("%s: %v, want nil, ctx.Err() or ErrCorrupt naming %s", ch.who, err, path)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not return within 5 s of being stopped (hang)", ch.who)
		}
	}
	if n := torn.Load(); n != 0 {
		t.Fatalf("%d torn payloads delivered without ErrCorrupt", n)
	}
	sub.Close()
	pub.Close()
}
