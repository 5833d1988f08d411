//go:build linux

package middleware_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Stage stamps: every committed message is stamped on both ends, the
// stamps join by Seq, are ordered (entry ≤ copy ≤ commit < callback,
// wake ≤ callback), and stamping allocates nothing.
func TestShmStageStamps(t *testing.T) {
	for _, tc := range transports[:2] {
		t.Run(tc.name, func(t *testing.T) {
			const n = 200
			d := testDomain(t)
			node, err := middleware.OpenNode("stages", &middleware.NodeOptions{Domain: d})
			if err != nil {
				t.Fatal(err)
			}
			defer node.Close()
			pubs := make([]middleware.PublishStages, 0, n+2000)
			subs := make([]middleware.ReceiveStages, 0, n+2000)
			c := middleware.Contract{Topic: "stages", MaxPayload: 4096, Transport: tc.tr, Reliability: middleware.Reliable, Depth: 8}
			sub, err := node.NewSubscriber(c, &middleware.SubscriberOptions{Stages: func(s *middleware.ReceiveStages) { subs = append(subs, *s) }})
			if err != nil {
				t.Fatal(err)
			}
			pub, err := node.NewPublisher(c, &middleware.PublisherOptions{Stages: func(s *middleware.PublishStages) { pubs = append(pubs, *s) }})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				for range n {
					if err := sub.Next(ctx, func(*middleware.Message) {}); err != nil {
						got <- err
						return
					}
				}
				got <- nil
			}()
			payload := make([]byte, 4096)
			for i := range n {
				if i%2 == 0 {
					if err := pub.Send(payload); err != nil {
						t.Fatal(err)
					}
				} else {
					l, err := pub.Loan()
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Publish(64); err != nil {
						t.Fatal(err)
					}
				}
				if i%20 == 0 {
					time.Sleep(200 * time.Microsecond) // pacing so the subscriber sleeps and is woken sometimes; not synchronisation
				}
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if len(pubs) != n || len(subs) != n {
				t.Fatalf("stamped %d published, %d received; want %d each", len(pubs), len(subs), n)
			}
			bySeq := map[uint64]middleware.PublishStages{}
			for _, p := range pubs {
				bySeq[p.Seq] = p
			}
			for i, r := range subs {
				p, ok := bySeq[r.Seq]
				if !ok {
					t.Fatalf("received seq %d has no publish stamps", r.Seq)
				}
				copied := (p.Seq-1)%2 == 0 // sequence numbers start at 1; even sends took the copy path
				if copied && !(p.Entry <= p.CopyStart && p.CopyStart <= p.CopyEnd && p.CopyEnd <= p.Commit) {
					t.Fatalf("msg %d copy stamps out of order: %+v", i, p)
				}
				if !copied && (p.CopyStart != 0 || p.CopyEnd != 0 || p.Entry > p.Commit) {
					t.Fatalf("msg %d loan stamps: %+v", i, p)
				}
				if !(p.Commit < r.Callback && r.Wake <= r.Callback) {
					t.Fatalf("msg %d: commit %d wake %d callback %d out of order", i, p.Commit, r.Wake, r.Callback)
				}
			}
			// Stamping allocates nothing (the slices have room).
			if a := testing.AllocsPerRun(500, func() {
				if err := pub.Send(payload); err != nil {
					t.Fatal(err)
				}
				if err := sub.Next(ctx, func(*middleware.Message) {}); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("stamped Send+Next: %v allocs/op", a)
			}
		})
	}
}
