package gpio_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestErrorTexts checks each error a lab will hit: the sentinel, and that
// the text names the chip, the line and the cause.
func TestErrorTexts(t *testing.T) {
	ctx := context.Background()
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 4, Group: "gpio-lab"})
	chip := sim.Chip()
	chipS := chip.String()
	line := func(l string) gpio.LineSpec { return gpio.LineSpec{Chip: chip, Line: l} }

	tests := []struct {
		name  string
		setup func(t *testing.T) // fault switches; undone by cleanup
		spec  gpio.LineSpec
		watch bool
		want  error
		texts []string
	}{
		{name: "chip missing (no such sim chip)", spec: gpio.LineSpec{Chip: "sim:no-such-chip-xyz", Line: "0"},
			want: gpio.ErrChipMissing, texts: []string{"sim:no-such-chip-xyz", "line 0", "gpio chip not found", "hilrig-gpiosim-no-such-chip-xyz"}},
		{name: "chip missing (real path)", spec: gpio.LineSpec{Chip: "/dev/gpiochip99", Line: "3"},
			want: gpio.ErrChipMissing, texts: []string{"/dev/gpiochip99", "line 3", "gpio chip not found"}},
		{name: "chip missing (real label)", spec: gpio.LineSpec{Chip: "no-such-label", Line: "3"},
			want: gpio.ErrChipMissing, texts: []string{"no-such-label", "line 3", "no chip has this label"}},
		{name: "chip missing (fault switch)", setup: fault(sim, gpiosim.FaultMissing), spec: line("1"),
			want: gpio.ErrChipMissing, texts: []string{chipS, "line 1", "gpio chip not found", "unplugged"}},
		{name: "chip missing on watch", setup: fault(sim, gpiosim.FaultMissing), spec: line("1"), watch: true,
			want: gpio.ErrChipMissing, texts: []string{chipS, "gpio chip not found"}},
		{name: "offset out of range", spec: line("4"),
			want: gpio.ErrOffsetRange, texts: []string{chipS, "line 4", "out of range", "4 lines (0..3)"}},
		{name: "offset out of range on watch", spec: line("9"), watch: true,
			want: gpio.ErrOffsetRange, texts: []string{chipS, "line 9", "out of range"}},
		{name: "line name not found", spec: line("NOPE"),
			want: gpio.ErrLineNotFound, texts: []string{chipS, `line "NOPE"`, "not found"}},
		{name: "line busy", setup: func(t *testing.T) {
			if err := sim.C.SetLineBusy(2, "kernel-led-driver"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sim.C.SetLineBusy(2, "") })
		}, spec: line("2"), want: gpio.ErrBusy, texts: []string{chipS, "line 2", "busy", `held by consumer "kernel-led-driver"`}},
		{name: "permission denied", setup: fault(sim, gpiosim.FaultPermission), spec: line("1"),
			want: gpio.ErrPermission, texts: []string{chipS, "line 1", "permission denied", `group "gpio-lab"`, "usermod -aG gpio-lab"}},
		{name: "permission denied on watch", setup: fault(sim, gpiosim.FaultPermission), spec: line("1"), watch: true,
			want: gpio.ErrPermission, texts: []string{chipS, `group "gpio-lab"`}},
		{name: "kernel too old", setup: fault(sim, gpiosim.FaultKernelTooOld), spec: line("1"),
			want: gpio.ErrKernelTooOld, texts: []string{chipS, "line 1", "uAPI v2", "5.10"}},
		{name: "invalid spec", spec: gpio.LineSpec{Chip: chip}, want: gpio.ErrInvalidSpec, texts: []string{"field line is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			var err error
			if tc.watch {
				var w *gpio.Watcher
				if w, err = gpio.Watch(ctx, tc.spec); err == nil {
					w.Close()
				}
			} else {
				var m *gpio.Output
				if m, err = gpio.Open(ctx, tc.spec, gpio.Mode{}); err == nil {
					m.Close()
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range tc.texts {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if !strings.HasPrefix(err.Error(), "gpio") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func fault(sim *gpiotest.Sim, f gpiosim.Fault) func(t *testing.T) {
	return func(t *testing.T) {
		sim.C.SetFault(f, true)
		t.Cleanup(func() { sim.C.SetFault(f, false) })
	}
}

// TestTinyBufferFault: with the tiny-buffer switch a reader that lags by
// more than two edges loses the oldest and is told so.
func TestTinyBufferFault(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 1})
	ctx := context.Background()
	w, err := gpio.Watch(ctx, gpio.LineSpec{Chip: sim.Chip(), Line: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sim.C.SetFault(gpiosim.FaultTinyBuffer, true)
	for i := range 10 {
		sim.C.Pull(0, i%2 == 0)
	}
	var e gpio.Edge
	err = w.ReadEdge(ctx, &e)
	var oe *gpio.OverflowError
	if !errors.As(err, &oe) || oe.Dropped != 8 || e.LineSeqno != 9 {
		t.Fatalf("err = %v, edge %v: want 8 dropped and edge 9 returned", err, e)
	}
	for _, s := range []string{sim.Chip().String(), "line 0", "8 edge events dropped"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("overflow error %q lacks %q", err, s)
		}
	}
	if err := w.ReadEdge(ctx, &e); err != nil || e.LineSeqno != 10 || e.Seqno != 10 {
		t.Fatalf("next edge %v (%v): want seq 10/10 without error", e, err)
	}
}
