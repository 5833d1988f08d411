//go:build linux

package middleware_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hilrig/hilrig/middleware"
)

// The hot paths allocate nothing: Send, Loan+Publish, Next (shm and
// intra), with both header clocks.
func TestHotPathsDoNotAllocate(t *testing.T) {
	for _, tc := range transports {
		for _, clk := range []middleware.ClockID{middleware.ClockRealtime, middleware.ClockTAI} {
			t.Run(fmt.Sprint(tc.name, "/clock", clk), func(t *testing.T) {
				d := testDomain(t)
				n, err := middleware.OpenNode("alloc", &middleware.NodeOptions{Domain: d, StampClock: clk})
				if err != nil {
					t.Fatal(err)
				}
				defer n.Close()
				c := middleware.Contract{Topic: "alloc", MaxPayload: 1024, Transport: tc.tr}
				sub, pub := openPair(t, n, c)
				payload := make([]byte, 512)
				ctx := context.Background()
				var sum int
				fn := func(m *middleware.Message) { sum += len(m.Payload) }
				if a := testing.AllocsPerRun(1000, func() {
					if err := pub.Send(payload); err != nil {
						t.Fatal(err)
					}
				}); a != 0 {
					t.Errorf("Send: %v allocs/op", a)
				}
				if a := testing.AllocsPerRun(1000, func() {
					l, err := pub.Loan()
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Publish(copy(l.Bytes(), payload)); err != nil {
						t.Fatal(err)
					}
				}); a != 0 {
					t.Errorf("Loan+Publish: %v allocs/op", a)
				}
				if a := testing.AllocsPerRun(1000, func() {
					if err := pub.Send(payload); err != nil {
						t.Fatal(err)
					}
					if err := sub.Next(ctx, fn); err != nil {
						t.Fatal(err)
					}
				}); a != 0 {
					t.Errorf("Send+Next: %v allocs/op", a)
				}
				if sum == 0 {
					t.Fatal("nothing received")
				}
			})
		}
	}
}

func BenchmarkSend(b *testing.B) {
	for _, size := range []int{16, 1 << 10, 1 << 20} {
		for _, tc := range transports[:2] {
			b.Run(fmt.Sprintf("%s/%dB", tc.name, size), func(b *testing.B) {
				benchPub(b, tc.tr, size, false)
			})
		}
	}
}

func BenchmarkLoan(b *testing.B) {
	for _, size := range []int{16, 1 << 10, 1 << 20} {
		for _, tc := range transports[:2] {
			b.Run(fmt.Sprintf("%s/%dB", tc.name, size), func(b *testing.B) {
				benchPub(b, tc.tr, size, true)
			})
		}
	}
}

// benchPub publishes with one best-effort subscriber attached (so holds
// are scanned) that never reads: it measures the publish side alone.
func benchPub(b *testing.B, tr middleware.Transport, size int, loan bool) {
	d := testDomain(b)
	n := openNode(b, "bench", d)
	c := middleware.Contract{Topic: "bench", MaxPayload: size, Transport: tr}
	if _, err := n.NewSubscriber(c, nil); err != nil {
		b.Fatal(err)
	}
	pub, err := n.NewPublisher(c, nil)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, size)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		if loan {
			l, err := pub.Loan()
			if err != nil {
				b.Fatal(err)
			}
			l.Bytes()[0] = 1
			if err := l.Publish(size); err != nil {
				b.Fatal(err)
			}
		} else if err := pub.Send(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendNext is a same-goroutine round of publish + receive.
func BenchmarkSendNext(b *testing.B) {
	for _, size := range []int{16, 1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			d := testDomain(b)
			n := openNode(b, "bench", d)
			c := middleware.Contract{Topic: "bench", MaxPayload: size, Transport: middleware.TransportShm}
			sub, pub := openPair(b, n, c)
			payload := make([]byte, size)
			ctx := context.Background()
			fn := func(*middleware.Message) {}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				pub.Send(payload)
				sub.Next(ctx, fn)
			}
		})
	}
}

// BenchmarkMemcpy is the baseline for BenchmarkSend's copy path: the same
// copy into a preallocated buffer, no middleware. Compare ratios from one
// run only.
func BenchmarkMemcpy(b *testing.B) {
	for _, size := range []int{16, 1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			src, dst := make([]byte, size), make([]byte, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}
