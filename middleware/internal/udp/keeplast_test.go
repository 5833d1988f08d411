package udp_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// TestKeepLastNeverWaitsForAcks: a reliable keep-last publisher whose only
// subscriber never acknowledges (an expected peer that is silent) sends on
// without waiting, where the send window blocks at Depth+1 and times out.
func TestKeepLastNeverWaitsForAcks(t *testing.T) {
	for _, keepLast := range []bool{false, true} {
		silent := openSock(t, lo) // bound, never read: no ACKNACK ever comes
		t.Cleanup(func() { silent.Close() })
		snd, err := udp.NewSender(openSock(t, lo), udp.SenderConfig{
			TopicID: 50, MaxPayload: 64, Reliable: true, Depth: 4, KeepLast: keepLast,
			Peers: []netip.AddrPort{silent.LocalAddr()}, SendTimeout: 30 * time.Millisecond, SubscriberTimeout: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snd.Close() })
		p := make([]byte, 16)
		var sendErr error
		sent := 0
		for i := uint64(1); i <= 40 && sendErr == nil; i++ {
			fill(p, i)
			if sendErr = snd.Send(p); sendErr == nil {
				sent++
			}
		}
		st := snd.Stats()
		if !keepLast {
			// The control: the window does wait, so the case below shows
			// keep-last's doing and not a silent peer dropped early.
			if !errors.Is(sendErr, udp.ErrTimeout) || sent != 4 {
				t.Fatalf("send window: sent %d then %v; want 4 then ErrTimeout", sent, sendErr)
			}
			continue
		}
		if sendErr != nil || sent != 40 || st.Timeouts != 0 || st.Blocked != 0 {
			t.Fatalf("keep-last: sent %d of 40, err %v, timeouts %d, blocked %v; want all sent, never blocked", sent, sendErr, st.Timeouts, st.Blocked)
		}
	}
}

// TestKeepLastRepairs: losses are repaired while the publisher still
// holds the message.
func TestKeepLastRepairs(t *testing.T) {
	const topic, depth = 51, 8
	r := newRig(t,
		udp.SenderConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: depth, KeepLast: true, HeartbeatPeriod: 5 * time.Millisecond},
		udp.ReceiverConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: depth, KeepLast: true},
		&udp.FaultConfig{Seed: 5, Drop: 0.1, Kinds: udp.KindMask(udp.KindData)})
	testkit.Eventually(t, 5*time.Second, "subscriber heard", func() bool { return r.snd.LiveSubscribers() == 1 })
	c := collect(r.rcv, true)
	msgs := &numbered{t: t, snd: r.snd, p: make([]byte, 100)}
	// One message at a time, so each stays in the history until repaired.
	for range 200 {
		seq := msgs.next()
		testkit.Eventually(t, 5*time.Second, "message delivered", func() bool { return r.rcv.Stats().Delivered == seq })
	}
	c.finish()
	fs, ss, rs := r.fault.Stats(), r.snd.Stats(), r.rcv.Stats()
	if fs.DroppedData == 0 || ss.Retransmits == 0 || rs.Lost != 0 || c.got != 200 || c.err != nil {
		t.Fatalf("dropped %d, retransmits %d, lost %d, got %d, err %v; want drops repaired, none lost", fs.DroppedData, ss.Retransmits, rs.Lost, c.got, c.err)
	}
}

// TestKeepLastSkipsWhatHistoryLost: a subscriber cut off for longer than
// Depth messages counts the ones gone from the history as lost, gets the
// rest (retransmitted) in order, and the publisher never waited for it.
func TestKeepLastSkipsWhatHistoryLost(t *testing.T) {
	const topic, depth, cut = 53, 8, 3 * 8
	r := newRig(t,
		udp.SenderConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: depth, KeepLast: true, HeartbeatPeriod: 5 * time.Millisecond},
		udp.ReceiverConfig{TopicID: topic, MaxPayload: 256, Reliable: true, Depth: depth, KeepLast: true},
		&udp.FaultConfig{Seed: 6, Drop: 1, Kinds: udp.KindMask(udp.KindData)})
	r.fault.SetEnabled(false)
	testkit.Eventually(t, 5*time.Second, "subscriber heard", func() bool { return r.snd.LiveSubscribers() == 1 })
	c := collect(r.rcv, true)
	msgs := &numbered{t: t, snd: r.snd, p: make([]byte, 100)}
	msgs.next()
	testkit.Eventually(t, 5*time.Second, "first message", func() bool { return r.rcv.Stats().Delivered == 1 })
	r.fault.SetEnabled(true) // every DATA datagram dropped, retransmissions too
	for range cut {
		msgs.next()
	}
	r.fault.SetEnabled(false)
	msgs.next()
	testkit.Eventually(t, 5*time.Second, "every sequence number delivered or lost", func() bool {
		st := r.rcv.Stats()
		return st.Delivered+st.Lost == msgs.seq
	})
	c.finish()
	rs, ss := r.rcv.Stats(), r.snd.Stats()
	// Held at the end: cut+2−depth+1 … cut+2; lost: 2 … cut+2−depth.
	if want := uint64(cut + 1 - depth); rs.Lost != want || c.lostSum != want {
		t.Fatalf("lost %d (per-message sum %d), want %d: the messages before the history's last %d", rs.Lost, c.lostSum, want, depth)
	}
	if c.err != nil || c.got != msgs.seq-rs.Lost || c.last != msgs.seq {
		t.Fatalf("delivered %d (last %d), want %d ending at %d; err %v", c.got, c.last, msgs.seq-rs.Lost, msgs.seq, c.err)
	}
	if ss.Blocked != 0 || ss.Timeouts != 0 || ss.Retransmits == 0 {
		t.Fatalf("publisher blocked %v (%d timeouts), retransmits %d: keep-last must not wait, and must repair the held tail", ss.Blocked, ss.Timeouts, ss.Retransmits)
	}
}

// TestKeepLastAcksOnlyOnHeartbeats: a keep-last subscriber does not
// acknowledge every Depth/2 messages (the acknowledgements would only cost
// the publisher reads); it answers heartbeats.
//
// The subscriber follows the publisher's mode, which every DATA and BATCH
// datagram carries, whatever it declares itself: a keep-last subscriber of
// a send-window publisher acknowledges every half window (else the window
// would wait for a heartbeat, here an hour, and Send would time out), and
// a send-window subscriber of a keep-last publisher only on heartbeats.
func TestKeepLastAcksOnlyOnHeartbeats(t *testing.T) {
	for _, tc := range []struct{ pub, sub, batch bool }{
		{false, false, false}, {true, true, false}, {false, true, false}, {true, false, false},
		{false, true, true}, {true, false, true},
	} {
		keepLast := tc.pub
		t.Logf("publisher keep-last %v, subscriber keep-last %v, batched %v", tc.pub, tc.sub, tc.batch)
		sc := udp.SenderConfig{TopicID: 52, MaxPayload: 64, Reliable: true, Depth: 2, KeepLast: tc.pub, HeartbeatPeriod: time.Hour}
		if tc.batch {
			// One record per BATCH (the next never fits), sent at once.
			sc.BatchBytes = udp.BatchHeaderLen + udp.RecordHeaderLen + 16
		}
		r := newRig(t, sc,
			udp.ReceiverConfig{TopicID: 52, MaxPayload: 64, Reliable: true, Depth: 2, KeepLast: tc.sub}, nil)
		testkit.Eventually(t, 5*time.Second, "subscriber heard", func() bool { return r.snd.LiveSubscribers() == 1 })
		// The sender hears the subscriber at its challenge; the ACKNACK
		// that answers the echo (the handshake's last) may still be on
		// its way and must not be counted as one for the messages.
		testkit.Eventually(t, 5*time.Second, "handshake answered", func() bool { return handshakeDone(r) })
		c := collect(r.rcv, true)
		before := r.rcv.Stats().AcksSent
		p := make([]byte, 16)
		for i := uint64(1); i <= 100; i++ {
			fill(p, i)
			if err := r.snd.Send(p); err != nil {
				t.Fatal(err)
			}
		}
		testkit.Eventually(t, 5*time.Second, "all delivered", func() bool { return r.rcv.Stats().Delivered == 100 })
		c.finish()
		acks := r.rcv.Stats().AcksSent - before
		if keepLast && acks != 0 {
			t.Fatalf("keep-last publisher: %d ACKNACKs for 100 messages and no heartbeat; want 0", acks)
		}
		if !keepLast && acks < 10 {
			t.Fatalf("send-window publisher: %d ACKNACKs for 100 messages at depth 2; the window needs them", acks)
		}
	}
}

// handshakeDone reports whether the challenge handshake between r's
// publisher and subscriber is over: the subscriber confirmed the writer
// (so it challenges no more) and answered every echo the publisher sent
// (one ACKNACK each, besides the challenges themselves).
func handshakeDone(r *rig) bool {
	rs := r.rcv.Stats()
	return rs.Confirmed == 1 && rs.AcksSent == rs.Challenges+r.snd.Stats().Echoes
}
