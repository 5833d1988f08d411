package gpio_test

import (
	"context"
	"flag"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// -gpio.chip (or HILRIG_GPIO_CHIP) points the benchmarks at a kernel
// gpio-sim chip as well; see gpio/gpiotest/kernel_test.go.
var chipFlag = flag.String("gpio.chip", os.Getenv(gpiotest.EnvChip), "kernel gpio-sim chip for the real-chip benchmarks (/dev/gpiochipN)")

type benchTarget struct {
	name string
	h    gpiotest.Harness
}

func benchTargets(b *testing.B) []benchTarget {
	t := []benchTarget{{"sim", gpiotest.NewSim(b, gpiosim.Config{Lines: 8, RingSize: 1 << 16})}}
	if *chipFlag != "" {
		h, err := gpiotest.OpenSysfsSim(*chipFlag)
		if err != nil {
			b.Fatalf("-gpio.chip=%s: %v", *chipFlag, err)
		}
		t = append(t, benchTarget{"kernel", h})
	}
	return t
}

// BenchmarkMark is the marker cost per edge (toggle mode), with the
// baselines of the same run: a vDSO clock read and the cheapest system
// call (getppid). On the kernel chip each edge is one
// GPIO_V2_LINE_SET_VALUES ioctl; compare with baseline/syscall.
func BenchmarkMark(b *testing.B) {
	b.Run("baseline/clock", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for b.Loop() {
			s += gpio.MonotonicNs()
		}
		_ = s
	})
	b.Run("baseline/syscall", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			syscall.Getppid()
		}
	})
	ctx := context.Background()
	for _, tg := range benchTargets(b) {
		b.Run(tg.name+"/unwatched", func(b *testing.B) {
			m, err := gpio.Open(ctx, gpio.LineSpec{Chip: tg.h.Chip(), Line: "0"}, gpio.Mode{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Mark(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(m.Edges()), "ns/edge")
		})
	}
	// With a watcher asleep in another goroutine every edge also costs
	// the futex wake-up on the simulated chip.
	b.Run("sim/watched", func(b *testing.B) {
		sim := gpiotest.NewSim(b, gpiosim.Config{Lines: 1, RingSize: 1 << 16})
		spec := gpio.LineSpec{Chip: sim.Chip(), Line: "0"}
		m, err := gpio.Open(ctx, spec, gpio.Mode{})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		w, err := gpio.Watch(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]gpio.Edge, 256)
			for {
				if _, err := w.ReadEdges(ctx, buf); err != nil && !isOverflow(err) {
					return
				}
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Mark(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(m.Edges()), "ns/edge")
		w.Close()
		<-done
	})
}

func isOverflow(err error) bool {
	_, ok := err.(*gpio.OverflowError)
	return ok
}

// BenchmarkCaptureLatency is the time from an edge's timestamp to the
// moment ReadEdge returns it in another goroutine that was asleep
// (capture-to-user-space latency), one edge at a time. Reported: mean,
// p50 and p99 in ns.
func BenchmarkCaptureLatency(b *testing.B) {
	ctx := context.Background()
	for _, tg := range benchTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			const line = 3
			if err := tg.h.Pull(line, false); err != nil {
				b.Fatal(err)
			}
			w, err := gpio.Watch(ctx, gpio.LineSpec{Chip: tg.h.Chip(), Line: "3"})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			lat := make([]int64, 0, 1<<16)
			got := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				var e gpio.Edge
				for {
					if err := w.ReadEdge(ctx, &e); err != nil {
						errc <- err
						return
					}
					lat = append(lat, gpio.MonotonicNs()-e.TimestampNs)
					got <- struct{}{}
				}
			}()
			b.ReportAllocs()
			high := false
			for b.Loop() {
				high = !high
				if err := tg.h.Pull(line, high); err != nil {
					b.Fatal(err)
				}
				select {
				case <-got:
				case err := <-errc:
					b.Fatal(err)
				}
			}
			b.StopTimer()
			w.Close()
			<-errc
			slices.Sort(lat)
			var sum int64
			for _, l := range lat {
				sum += l
			}
			if n := len(lat); n > 0 {
				b.ReportMetric(float64(sum)/float64(n), "mean-ns")
				b.ReportMetric(float64(lat[n/2]), "p50-ns")
				b.ReportMetric(float64(lat[n*99/100]), "p99-ns")
			}
		})
	}
}
