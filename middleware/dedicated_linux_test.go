package middleware_test

import (
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
// garbage collections keep finishing meanwhile (their preemption signal
// ends the held sleep); the reservation is returned after every sleep;
// an idle wait still ends on the context's deadline.
func TestDedicatedWait(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	for name, tr := range map[string]middleware.Transport{"shm": middleware.TransportShm, "intra": middleware.TransportIntra} {
		t.Run(name, func(t *testing.T) {
			n := openNode(t, "dedicated", testDomain(t))
			c := middleware.Contract{Topic: "dedicated/" + name, MaxPayload: 64, Depth: 4, Transport: tr}
			sub, pub := openPairWith(t, n, c, &middleware.SubscriberOptions{DedicatedWait: true}, c, nil)
			gcs := collectGarbage(t)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const msgs = 20
			sent := make(chan error, 1)
			var consumed atomic.Int64
			go func() {
				p := make([]byte, 8)
				for i := 1; i <= msgs; i++ {
					// Only once the subscriber took the previous message
					// and sleeps again holding its P (it returned the
					// previous sleep's reservation before taking it).
					testkit.Eventually(t, 10*time.Second, "the subscriber sleeps holding its P", func() bool {
						return consumed.Load() == int64(i-1) && rt.Held() == 1
					})
					p[0] = byte(i)
					if err := pub.Send(p); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			start := gcs()
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
			if gcs() == start {
				t.Fatal("no garbage collection finished while the subscriber slept holding its P")
			}
			t.Logf("%d messages, each sent during a held sleep; %d collections finished meanwhile", msgs, gcs()-start)
			expectIdleDeadline(t, sub)
		})
	}
}
