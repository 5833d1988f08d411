package udp_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatching2kHz1KiB measures what batching buys at 2 kHz of 1 KiB
// messages on loopback: process CPU time per message (getrusage, both ends
// in this process) and one-way latency p50/p99, batching off vs on. Run
// with -benchtime=1x; each iteration is 2 s of paced traffic (4000
// messages). Compare the sub-benchmarks of one run, not against constants.
func BenchmarkBatching2kHz1KiB(b *testing.B) {
	cases := []struct {
		name  string
		bytes int
		delay time.Duration
	}{
		{"batch=off", 0, 0},
		{"batch=8KiB/delay=200us", 8192, 200 * time.Microsecond},
		{"batch=8KiB/delay=2ms", 8192, 2 * time.Millisecond},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			const topic, rate, msgs = 90, 2000, 4000
			r := newRig(b,
				udp.SenderConfig{TopicID: topic, MaxPayload: 1024, FragSize: 60000, BatchBytes: tc.bytes, BatchDelay: tc.delay},
				udp.ReceiverConfig{TopicID: topic, MaxPayload: 1024},
				nil)
			lat := make([]int64, 0, msgs)
			done := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				defer close(done)
				for {
					if r.rcv.Next(ctx, func(d *udp.Delivery) { lat = append(lat, time.Now().UnixNano()-d.SendMono) }) != nil {
						return
					}
				}
			}()
			p := make([]byte, 1024)
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuNow()
				start := time.Now()
				for i := range msgs {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
						time.Sleep(d) // pacing to a rate, not synchronisation
					}
					_ = r.snd.Send(p)
				}
				_ = r.snd.Flush()
				testkit.Eventually(b, 5*time.Second, "all delivered", func() bool { return r.rcv.Stats().Delivered+r.rcv.Stats().Lost >= uint64(msgs) })
				cpu += cpuNow() - c0
			}
			cancel()
			<-done
			slices.Sort(lat)
			n := len(lat)
			st := r.snd.Stats()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*msgs), "cpu-us/msg")
			b.ReportMetric(float64(lat[n/2])/1e3, "p50-us")
			b.ReportMetric(float64(lat[n*99/100])/1e3, "p99-us")
			b.ReportMetric(float64(st.Datagrams)/float64(st.Published), "datagrams/msg")
		})
	}
}
