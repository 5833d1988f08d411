package gpio_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestMarkAllocs: the hot path allocates nothing, in every mode, with and
// without a watcher reading the edges.
func TestMarkAllocs(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 3})
	ctx := context.Background()
	for i, mode := range []gpio.Mode{{}, {Every: 4}, {Kind: gpio.Pulse, Width: time.Microsecond}} {
		t.Run(mode.String(), func(t *testing.T) {
			spec := gpio.LineSpec{Chip: sim.Chip(), Line: string(rune('0' + i))}
			m, err := gpio.Open(ctx, spec, mode)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			w, err := gpio.Watch(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var e gpio.Edge
			if a := testing.AllocsPerRun(1000, func() {
				if err := m.Mark(); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Fatalf("Mark: %v allocs per call, want 0", a)
			}
			// Reading edges back is allocation-free as well (no overflow:
			// the ring holds 4096 and we marked at most 2002 edges).
			if a := testing.AllocsPerRun(100, func() {
				if err := w.ReadEdge(ctx, &e); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Fatalf("ReadEdge: %v allocs per call, want 0", a)
			}
		})
	}
}
