package udp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// BenchmarkReliableSendNext is one reliable publish and its delivery on
// loopback, both ends in this goroutine (Send, then Next): the send
// window's acknowledgements, the receiver's sequencing and the sender's
// inline reads, the work the trust checks (confirmed writers, the stall
// bound, the retransmission budget) sit on. Sizes: 16 B (one datagram)
// and 64 KiB (64 fragments of 1 KiB: one GSO run, one GRO read).
func BenchmarkReliableSendNext(b *testing.B) {
	for _, size := range []int{16, 64 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			const topic = 91
			r := newRig(b,
				udp.SenderConfig{TopicID: topic, MaxPayload: size, FragSize: 1024, Reliable: true, Depth: 16},
				udp.ReceiverConfig{TopicID: topic, MaxPayload: size, Reliable: true, Depth: 16},
				nil)
			testkit.Eventually(b, 5*time.Second, "subscriber heard", func() bool { return r.snd.LiveSubscribers() == 1 })
			p := make([]byte, size)
			ctx := context.Background()
			fn := func(*udp.Delivery) {}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := r.snd.Send(p); err != nil {
					b.Fatal(err)
				}
				if err := r.rcv.Next(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
