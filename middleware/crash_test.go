//go:build linux

package middleware_test

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// A publisher child is SIGKILLed at random points of its loan-fill-publish
// loop, 50 times, while this process drains the topic. The subscriber must
// never see a torn payload, must see every restart as a new epoch whose
// sequence restarts at 1, must lose nothing (Reliable: the message being
// written when the child died was never published), and must keep
// receiving after each restart. The test also checks that kills did land
// mid-write (a slot left with an odd seqlock), so it covers that case.
func TestPublisherSIGKILL(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "victim-watcher", d)
	c := middleware.Contract{Topic: "crash/cam", MaxPayload: 256 << 10, Slots: 3, Reliability: middleware.Reliable, Transport: middleware.TransportShm}
	sub, err := n.NewSubscriber(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 50*time.Second)
	var torn, epochs, badSeq atomic.Int64
	readerDone := make(chan error, 1)
	go func() {
		var lastEpoch uint32
		var lastSeq uint64
		for {
			err := sub.Next(ctx, func(m *middleware.Message) {
				if tag, ok := checkPattern(m.Payload); !ok || tag != m.Header.Seq {
					torn.Add(1)
				}
				if m.Header.Epoch != lastEpoch {
					if m.Header.Seq != 1 {
						badSeq.Add(1)
					}
					lastEpoch = m.Header.Epoch
					epochs.Add(1)
				} else if m.Header.Seq != lastSeq+1 {
					badSeq.Add(1)
				}
				lastSeq = m.Header.Seq
			})
			if err != nil {
				readerDone <- err
				return
			}
		}
	}()
	const kills = 50
	midWrite := 0
	for k := 0; k < kills; k++ {
		seen := epochs.Load()
		cmd, out := helperCmd(t, "pubforever", helperEnvFor(d, c, 0)...)
		expectLine(t, out, "ready")
		for epochs.Load() == seen {
			select {
			case err := <-readerDone:
				t.Fatalf("kill %d: reader: %v", k, err)
			default:
			}
		}
		// Let it run a random while (busy wait: a timer would add
		// scheduler jitter, not randomness), then kill.
		until := time.Now().Add(time.Duration(rand.IntN(2000)) * time.Microsecond)
		for time.Now().Before(until) {
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee interface{ Sys() any }
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended with %v, want SIGKILL (did it fail on its own?)", k, err)
		}
		segs, _ := middleware.ListSegments("")
		for _, s := range segs {
			if s.Domain == d && s.WritingSlots > 0 {
				midWrite++
			}
		}
	}
	st := sub.Stats()
	if n := torn.Load(); n != 0 {
		t.Fatalf("%d torn deliveries", n)
	}
	if n := badSeq.Load(); n != 0 {
		t.Fatalf("%d sequence errors (epoch not starting at 1, or gap inside an epoch)", n)
	}
	if n := epochs.Load(); n != kills {
		t.Fatalf("saw %d epochs, want %d", n, kills)
	}
	if st.Lost != 0 {
		t.Fatalf("lost %d messages across restarts, want 0 (no false loss storm)", st.Lost)
	}
	if midWrite < 3 {
		t.Fatalf("only %d of %d kills landed mid-write; the test does not cover torn slots", midWrite, kills)
	}
	t.Logf("%d kills (%d mid-write), stats %+v", kills, midWrite, st)
}

// A Reliable publisher blocked by a subscriber process that never reads
// times out while that process lives, and proceeds once it is SIGKILLed:
// the dead subscriber is detected by PID and dropped.
func TestReliableDeadSubscriberDropped(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "pub", d)
	c := middleware.Contract{Topic: "rel/dead", MaxPayload: 32, Slots: 2, Reliability: middleware.Reliable, Transport: middleware.TransportShm}
	pub, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cmd, out := helperCmd(t, "subidle", helperEnvFor(d, c, 0)...)
	expectLine(t, out, "ready")
	msg := make([]byte, 16)
	for i := 0; i < c.Slots; i++ {
		if err := pub.Send(msg); err != nil {
			t.Fatalf("send %d into free ring: %v", i, err)
		}
	}
	start := time.Now()
	err = pub.Send(msg)
	if !errors.Is(err, middleware.ErrTimeout) {
		t.Fatalf("send into full ring with a live idle subscriber: %v, want ErrTimeout", err)
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("timed out after %v, before SendTimeout", el)
	}
	if st := pub.Stats(); st.Timeouts != 1 || st.Blocked < 90*time.Millisecond {
		t.Fatalf("stats after timeout: %+v", st)
	}
	cmd.Process.Kill()
	cmd.Wait()
	pub2 := pub
	if err := pub2.Send(msg); err != nil {
		t.Fatalf("send after subscriber died: %v", err)
	}
	if st := pub.Stats(); st.DroppedSubs != 1 {
		t.Fatalf("DroppedSubs = %d, want 1", st.DroppedSubs)
	}
}
