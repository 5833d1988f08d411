package udp_test

import (
	"errors"
	"fmt"
	"github.com/hilrig/hilrig/internal/testkit"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// forger sends hand-made datagrams from its own loopback socket until
// stopped, and counts what comes back to it.
type forger struct {
	sock *udp.Socket
	buf  []byte
}

func newForger(t *testing.T) *forger {
	t.Helper()
	s := openSock(t, lo)
	t.Cleanup(func() { s.Close() })
	return &forger{sock: s, buf: make([]byte, udp.MaxDatagram+1)}
}

func (f *forger) send(t testing.TB, b []byte, to netip.AddrPort) {
	if err := f.sock.WriteTo(b, to); err != nil {
		t.Error(err)
	}
}

// drawn reads what arrives at the forger's socket for d (a measurement
// window, not a synchronisation) and returns datagrams and bytes.
func (f *forger) drawn(d time.Duration) (n, bytes int) {
	end := time.Now().Add(d)
	_ = f.sock.SetReadDeadline(end)
	for {
		m, _, _, err := f.sock.ReadFrom(f.buf)
		if err != nil {
			return n, bytes
		}
		n++
		bytes += m
	}
}

// TestForgedFirstFragmentsDoNotStallReliable: first fragments of large
// messages under made-up epochs (valid CRC) flood a reliable subscriber
// while a real publisher sends flat out. Before the fix the forged streams
// took the reassembly pool, which a reliable stream could not reclaim, and
// the publisher's sends timed out (issue 14, item 1).
func TestForgedFirstFragmentsDoNotStallReliable(t *testing.T) {
	const topic, size, frag, n = 60, 64 << 10, 8000, 300
	r := newRig(t,
		udp.SenderConfig{TopicID: topic, MaxPayload: size, FragSize: frag, Reliable: true, Depth: 8, SendTimeout: time.Second},
		udp.ReceiverConfig{TopicID: topic, MaxPayload: size, Reliable: true, Depth: 8, ReassemblyBytes: 8 * size},
		nil)
	testkit.Eventually(t, 5*time.Second, "subscriber heard", func() bool { return r.snd.LiveSubscribers() == 1 })
	c := collect(r.rcv, true)
	p := make([]byte, size)
	fill(p, 1)
	if err := r.snd.Send(p); err != nil { // the real writer is confirmed first
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "first message", func() bool { return r.rcv.Stats().Delivered == 1 })

	f := newForger(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var forged uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		buf := make([]byte, frag+udp.DataHeaderLen)
		pay := make([]byte, frag)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			// A new made-up epoch per burst, first fragments of 8 messages.
			ep := rng.Uint32() | 1
			for seq := uint64(1); seq <= 8; seq++ {
				d := udp.Data{TopicID: topic, Epoch: ep, MsgHeader: udp.MsgHeader{Seq: seq}, MsgLen: size, FragSize: frag, FragCount: uint32(udp.FragCountFor(size, frag)), Payload: pay}
				m, _ := d.MarshalBinaryTo(buf)
				f.send(t, buf[:m], r.rcv.LocalAddr())
				forged++
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var sendErr error
	for i := uint64(2); i <= n; i++ {
		fill(p, i)
		if sendErr = r.snd.Send(p); sendErr != nil {
			sendErr = fmt.Errorf("send %d: %w", i, sendErr)
			break
		}
	}
	close(stop)
	wg.Wait()
	if sendErr == nil {
		testkit.Eventually(t, 10*time.Second, "all delivered", func() bool { return r.rcv.Stats().Delivered == n })
	}
	c.finish()
	st := r.rcv.Stats()
	t.Logf("forged %d first fragments; stats %+v; sender %+v", forged, st, r.snd.Stats())
	if sendErr != nil {
		t.Fatalf("real publisher stalled under forged fragments: %v (receiver pool exhausted %d)", sendErr, st.PoolExhausted)
	}
	if c.err != nil || c.got != n || st.Lost != 0 || c.lostSum != 0 {
		t.Fatalf("got %d of %d, lost %d, err %v", c.got, n, st.Lost, c.err)
	}
}

// TestForgedWholeMessagesNotDelivered: whole single-fragment messages under
// made-up epochs were handed to the application before (issue 14, item 3).
// Now only a writer that echoed its challenge is delivered; the rest is
// counted as Unconfirmed.
func TestForgedWholeMessagesNotDelivered(t *testing.T) {
	for _, rel := range []bool{false, true} {
		t.Run(fmt.Sprintf("reliable=%v", rel), func(t *testing.T) {
			topic := uint32(61)
			if rel {
				topic = 62
			}
			r := newRig(t,
				udp.SenderConfig{TopicID: topic, MaxPayload: 256, Reliable: rel, Depth: 8},
				udp.ReceiverConfig{TopicID: topic, MaxPayload: 256, Reliable: rel, Depth: 8},
				nil)
			c := collect(r.rcv, false)
			p := make([]byte, 100)
			fill(p, 1)
			if err := r.snd.Send(p); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 5*time.Second, "first real message", func() bool { return r.rcv.Stats().Delivered == 1 })
			f := newForger(t)
			buf := make([]byte, 512)
			const forged = 50
			for i := range forged {
				d := udp.Data{TopicID: topic, Epoch: uint32(1000 + i), MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 4, FragSize: 4, FragCount: 1, Payload: []byte("evil")}
				m, _ := d.MarshalBinaryTo(buf)
				f.send(t, buf[:m], r.rcv.LocalAddr())
			}
			for i := uint64(2); i <= 10; i++ {
				fill(p, i)
				if err := r.snd.Send(p); err != nil {
					t.Fatal(err)
				}
			}
			end := time.Now().Add(15 * time.Second) // forged streams are forgotten after WriterTimeout (3 s)
			for st := r.rcv.Stats(); st.Delivered < 10 || st.Unconfirmed == 0; st = r.rcv.Stats() {
				if time.Now().After(end) {
					t.Fatalf("real messages not delivered or forged ones not discarded: %+v", st)
				}
				time.Sleep(time.Millisecond)
			}
			c.finish()
			st := r.rcv.Stats()
			if st.Delivered != 10 || c.got != 10 || c.err != nil {
				t.Fatalf("delivered %d (want the 10 real ones only), collector err %v, stats %+v", st.Delivered, c.err, st)
			}
			if st.Confirmed != 1 {
				t.Fatalf("confirmed %d writers, want 1: %+v", st.Confirmed, st)
			}
		})
	}
}

// TestForgedHeartbeatsDrawBoundedBytes: four heartbeats under made-up
// epochs, claiming a long history, drew ~756× their size in NACKs over 3 s
// before (issue 14, item 2). Now each draws at most one challenge no
// longer than itself.
func TestForgedHeartbeatsDrawBoundedBytes(t *testing.T) {
	const topic = 63
	rcv, err := udp.NewReceiver(openSock(t, lo), udp.ReceiverConfig{TopicID: topic, MaxPayload: 1024, Reliable: true, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	f := newForger(t)
	buf := make([]byte, 128)
	sent := 0
	for i := range 4 {
		hb := udp.Heartbeat{TopicID: topic, Epoch: uint32(77 + i), FirstSeq: 1, LastSeq: 1_000_000}
		m, _ := hb.MarshalBinaryTo(buf)
		f.send(t, buf[:m], rcv.LocalAddr())
		sent += m
	}
	n, got := f.drawn(time.Second)
	t.Logf("%d forged heartbeats (%d B) drew %d datagrams (%d B): %.1f×", 4, sent, n, got, float64(got)/float64(sent))
	if got > 2*sent {
		t.Fatalf("forged heartbeats (%d B) drew %d B (%d datagrams): more than 2× the request", sent, got, n)
	}
}

// TestForgedAckNacksDrawBoundedBytes: an ACKNACK for the publisher's epoch
// from a source that is not a peer and never received the publisher's
// token (a spoofed victim) asks for 64 whole messages. Before, the
// publisher retransmitted them all to that source.
func TestForgedAckNacksDrawBoundedBytes(t *testing.T) {
	const topic, size = 64, 16 << 10
	r := newRig(t,
		udp.SenderConfig{TopicID: topic, MaxPayload: size, FragSize: 8000, Reliable: true, Depth: 64, HeartbeatPeriod: time.Hour},
		udp.ReceiverConfig{TopicID: topic, MaxPayload: size, Reliable: true, Depth: 64},
		nil)
	c := collect(r.rcv, true)
	defer c.finish()
	p := make([]byte, size)
	for i := uint64(1); i <= 64; i++ {
		fill(p, i)
		if err := r.snd.Send(p); err != nil {
			t.Fatal(err)
		}
	}
	f := newForger(t)
	a := udp.AckNack{TopicID: topic, Epoch: r.snd.Epoch(), N: 64}
	for i := range a.N {
		a.Entries[i] = udp.NackEntry{Seq: uint64(i + 1)}
	}
	buf := make([]byte, 2048)
	m, _ := a.MarshalBinaryTo(buf)
	sent := 0
	for range 4 {
		f.send(t, buf[:m], r.snd.LocalAddr())
		sent += m
	}
	n, got := f.drawn(500 * time.Millisecond)
	t.Logf("%d forged ACKNACKs (%d B) drew %d datagrams (%d B); sender %+v", 4, sent, n, got, r.snd.Stats())
	if got > 2*sent {
		t.Fatalf("forged ACKNACKs (%d B) drew %d B: more than 2× the request", sent, got)
	}
	if st := r.snd.Stats(); st.Unproven != 4 || st.LiveSubs != 1 {
		t.Fatalf("want 4 unproven ACKNACKs and the forger kept out of the window: %+v", st)
	}
}

func testKey(t testing.TB, b byte) *udp.Key {
	k := make([]byte, 32)
	for i := range k {
		k[i] = b + byte(i)
	}
	key, err := udp.NewKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestAuthenticatedDomain: under a domain key real traffic flows (reliable,
// fragmented), datagrams sealed with another key or none are dropped and
// counted, and a captured authentic datagram replayed is dropped as a
// replay.
func TestAuthenticatedDomain(t *testing.T) {
	const topic, size = 65, 20_000
	key := testKey(t, 1)
	sniff := openSock(t, lo)
	defer sniff.Close()
	r := newRig(t,
		udp.SenderConfig{TopicID: topic, MaxPayload: size, FragSize: 4000, Reliable: true, Depth: 8, Key: key,
			Peers: []netip.AddrPort{sniff.LocalAddr()}, SubscriberTimeout: 200 * time.Millisecond, SendTimeout: 5 * time.Second},
		udp.ReceiverConfig{TopicID: topic, MaxPayload: size, Reliable: true, Depth: 8, Key: key},
		nil)
	c := collect(r.rcv, true)
	p := make([]byte, size)
	const n = 50
	for i := uint64(1); i <= n; i++ {
		fill(p, i)
		if err := r.snd.Send(p); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "all delivered", func() bool { return r.rcv.Stats().Delivered == n })
	// Capture an authentic DATA datagram (the sniffer is a second peer).
	buf := make([]byte, udp.MaxDatagram+1)
	var captured []byte
	_ = sniff.SetReadDeadline(time.Now().Add(5 * time.Second))
	for captured == nil {
		m, _, _, err := sniff.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if buf[5]&^udp.KindAuth == byte(udp.KindData) && buf[5]&udp.KindAuth != 0 {
			captured = append([]byte(nil), buf[:m]...)
		}
	}
	f := newForger(t)
	// Unsealed, sealed with another key's sender, and a replay of the real
	// publisher's datagram from its own address would need spoofing: the
	// replay goes through the real sender's socket instead.
	out := make([]byte, 512)
	d := udp.Data{TopicID: topic, Epoch: r.snd.Epoch(), MsgHeader: udp.MsgHeader{Seq: n + 1}, MsgLen: 4, FragSize: 4, FragCount: 1, Payload: []byte("evil")}
	m, _ := d.MarshalBinaryTo(out)
	f.send(t, out[:m], r.rcv.LocalAddr())
	other, err := udp.NewSender(openSock(t, lo), udp.SenderConfig{TopicID: topic, MaxPayload: 64, Key: testKey(t, 9), Peers: []netip.AddrPort{r.rcv.LocalAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Send([]byte("evil")); err != nil {
		t.Fatal(err)
	}
	other.Close() // its close-time datagrams are unauthenticated too
	testkit.Eventually(t, 5*time.Second, "unauthenticated datagrams counted", func() bool { return r.rcv.Stats().Unauthenticated >= 2 })
	base := r.rcv.Stats()
	for range 3 {
		if err := udp.ExportWriteRaw(r.snd, captured, r.rcv.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 5*time.Second, "replays counted", func() bool { return r.rcv.Stats().Replayed-base.Replayed == 3 })
	c.finish()
	st := r.rcv.Stats()
	if st.Delivered != n || c.got != n || c.err != nil || st.Lost != 0 {
		t.Fatalf("delivered %d of %d, err %v, stats %+v", c.got, n, c.err, st)
	}
}

func TestNewKeyRejectsShortKeys(t *testing.T) {
	if _, err := udp.NewKey(make([]byte, udp.MinKeyLen-1)); !errors.Is(err, udp.ErrConfig) {
		t.Fatalf("short key: %v", err)
	}
}

// TestAuthHotPathAllocs: sealing and verifying keep the send/receive path
// allocation-free.
func TestAuthHotPathAllocs(t *testing.T) {
	key := testKey(t, 3)
	for _, rel := range []bool{false, true} {
		t.Run(fmt.Sprintf("reliable=%v", rel), func(t *testing.T) {
			topic := uint32(66)
			if rel {
				topic = 67
			}
			r := newRig(t,
				udp.SenderConfig{TopicID: topic, MaxPayload: 1024, HeartbeatPeriod: time.Hour, Reliable: rel, Depth: 8, Key: key},
				udp.ReceiverConfig{TopicID: topic, MaxPayload: 1024, Reliable: rel, Depth: 8, Key: key},
				nil)
			if a := r.roundTripAllocs(t, make([]byte, 64)); a != 0 {
				t.Errorf("keyed send+receive: %v allocs/op, want 0", a)
			}
		})
	}
}

// TestNewWriterAdmittedUnderEpochFlood: a flood of one-datagram made-up
// epochs keeps the writer table full of unconfirmed streams; a publisher
// that starts during the flood is still admitted (its echo of a stateless
// challenge displaces an unconfirmed stream) and delivers everything.
func TestNewWriterAdmittedUnderEpochFlood(t *testing.T) {
	const topic, n = 68, 200
	rs := openSock(t, lo)
	rcv, err := udp.NewReceiver(rs, udp.ReceiverConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	c := collect(rcv, true)
	f := newForger(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ep := uint32(5000); ; ep++ {
			for i := range uint32(10) {
				d := udp.Data{TopicID: topic, Epoch: ep*10 + i, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 4, FragSize: 4, FragCount: 1, Payload: []byte("evil")}
				m, _ := d.MarshalBinaryTo(buf)
				f.send(t, buf[:m], rs.LocalAddr())
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	testkit.Eventually(t, 5*time.Second, "writer table full", func() bool { return rcv.Stats().UnknownWriter > 100 })
	snd, err := udp.NewSender(openSock(t, lo), udp.SenderConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: 8,
		Peers: []netip.AddrPort{rs.LocalAddr()}, SendTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	p := make([]byte, 100)
	var sendErr error
	for i := uint64(1); i <= n && sendErr == nil; i++ {
		fill(p, i)
		sendErr = snd.Send(p)
	}
	if sendErr == nil {
		testkit.Eventually(t, 10*time.Second, "all delivered", func() bool { return rcv.Stats().Delivered == n })
	}
	close(stop)
	<-done
	c.finish()
	st := rcv.Stats()
	if sendErr != nil || c.got != n || c.err != nil || st.Lost != 0 {
		t.Fatalf("send err %v; got %d of %d, err %v, stats %+v", sendErr, c.got, n, c.err, st)
	}
	t.Logf("stats %+v", st)
}
