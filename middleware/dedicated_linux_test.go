package middleware_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/middleware/internal/rt"
)

// TestDedicatedWait: a shared-memory or intra-process subscriber whose
// futex sleep keeps its P (SubscriberOptions.DedicatedWait) is woken for
// every message, in order, each sent while it sleeps holding the P;
// a garbage collection started during a held sleep finishes (its
// preemption signal ends the sleep), with collections running back to
// back throughout; the reservation is returned after every sleep;
// an idle wait still ends on the context's deadline.
func TestDedicatedWait(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	for name, tr := range map[string]middleware.Transport{"shm": middleware.TransportShm, "intra": middleware.TransportIntra} {
		t.Run(name, func(t *testing.T) {
			n := openNode(t, "dedicated", testDomain(t))
			c := middleware.Contract{Topic: "dedicated/" + name, MaxPayload: 64, Depth: 4, Transport: tr}
			sub, pub := openPairWith(t, n, c, &middleware.SubscriberOptions{DedicatedWait: true}, c, nil)
			collectGarbage(t) // collections back to back throughout
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const msgs = 20
			sent := make(chan error, 1)
			var consumed atomic.Int64
			go func() { sent <- sendDuringHeldSleeps(pub, msgs, &consumed) }()
			for i := 1; i <= msgs; i++ {
				var got byte
				if err := sub.Next(ctxT(t, 10*time.Second), func(m *middleware.Message) { got = m.Payload[0]; consumed.Add(1) }); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if got != byte(i) {
					t.Fatalf("message %d carried %d", i, got)
				}
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if rt.Held() != 0 {
				t.Fatalf("%d Ps still held with nobody waiting", rt.Held())
			}
			expectIdleDeadline(t, sub)
		})
	}
}

// sendDuringHeldSleeps sends msgs numbered messages on pub, each only once
// the subscriber has taken the one before (consumed) and sleeps again
// holding its P (it returned the previous sleep's reservation before
// taking it). Halfway, while the subscriber sleeps holding its P, it runs
// a garbage collection, which must finish: its stop-the-world preempts
// the held sleep (which in any case lasts at most one 20 ms slice). Runs on its own goroutine, so it reports by error.
func sendDuringHeldSleeps(pub *middleware.Publisher, msgs int, consumed *atomic.Int64) error {
	p := make([]byte, 8)
	for i := 1; i <= msgs; i++ {
		deadline := time.Now().Add(10 * time.Second)
		for consumed.Load() != int64(i-1) || rt.Held() != 1 {
			if time.Now().After(deadline) {
				return fmt.Errorf("message %d: the subscriber did not sleep holding its P within 10 s", i)
			}
			time.Sleep(testkit.PollInterval)
		}
		if i == msgs/2 {
			gc := make(chan struct{})
			go func() { runtime.GC(); close(gc) }()
			select {
			case <-gc:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("a garbage collection started while the subscriber slept holding its P did not finish in 10 s")
			}
		}
		p[0] = byte(i)
		if err := pub.Send(p); err != nil {
			return err
		}
	}
	return nil
}
