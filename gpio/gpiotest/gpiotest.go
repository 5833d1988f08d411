// Package gpiotest is the conformance test of the gpio package's lines:
// one function, Run, exercised against the simulated chip in every `go
// test` and against a real kernel chip (the kernel's gpio-sim inside the
// virtual board) when one exists. A Harness plays the part of the wiring:
// it drives input lines and reads what output lines drive.
package gpiotest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/kind"
)

// MinLines is the number of lines Run needs.
const MinLines = 8

// Harness gives Run access to a chip's pins from outside.
type Harness interface {
	// Chip is the chip reference for gpio.LineSpec.Chip ("sim:NAME",
	// "/dev/gpiochip3", "gpiochip3").
	Chip() kind.Chip
	// Lines is the number of lines of the chip (at least MinLines).
	Lines() int
	// Pull drives the physical level of a line not requested as output
	// (kernel gpio-sim: sysfs "pull").
	Pull(offset int, high bool) error
	// Level reads the physical level of a line (kernel gpio-sim: sysfs
	// "value").
	Level(offset int) (bool, error)
	// LineName returns the name of offset, or "" if the chip does not name it.
	LineName(offset int) string
}

const waitFor = 5 * time.Second

// Run runs the conformance subtests. Line use: 0 toggle, 1 active-low,
// 2 busy, 3 and 4 watch, 5 every-k, 6 pulse, 7 overflow.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Lines() < MinLines {
		t.Fatalf("gpiotest: chip %s has %d lines, conformance needs %d", h.Chip(), h.Lines(), MinLines)
	}
	spec := func(line int) gpio.LineSpec {
		return gpio.LineSpec{Chip: h.Chip(), Line: strconv.Itoa(line), Consumer: "gpiotest"}
	}
	ctx := context.Background()
	level := func(t *testing.T, line int, want bool, what string) {
		t.Helper()
		got, err := h.Level(line)
		if err != nil {
			t.Fatalf("read level of line %d: %v", line, err)
		}
		if got != want {
			t.Fatalf("%s: line %d physical level = %v, want %v", what, line, got, want)
		}
	}

	// open opens a marker on s, closed when the subtest ends.
	open := func(t *testing.T, s gpio.LineSpec, mode gpio.Mode) *gpio.Output {
		t.Helper()
		m, err := gpio.Open(ctx, s, mode)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}

	t.Run("MarkerToggle", func(t *testing.T) {
		m := open(t, spec(0), gpio.Mode{})
		level(t, 0, false, "after open")
		for i := 1; i <= 4; i++ {
			if err := m.Mark(); err != nil {
				t.Fatal(err)
			}
			level(t, 0, i%2 == 1, fmt.Sprintf("after mark %d", i))
		}
		if m.Edges() != 4 || m.Marks() != 4 {
			t.Fatalf("edges/marks = %d/%d, want 4/4", m.Edges(), m.Marks())
		}
	})

	t.Run("MarkerActiveLow", func(t *testing.T) {
		s := spec(1)
		s.ActiveLow = true
		m := open(t, s, gpio.Mode{})
		level(t, 1, true, "inactive active-low line")
		if err := m.Mark(); err != nil {
			t.Fatal(err)
		}
		level(t, 1, false, "marked active-low line")
	})

	t.Run("MarkerEveryK", func(t *testing.T) {
		m := open(t, spec(5), gpio.Mode{Every: 3})
		// Messages 1, 4, 7 toggle the line.
		want := []bool{true, true, true, false, false, false, true}
		for i, w := range want {
			if err := m.Mark(); err != nil {
				t.Fatal(err)
			}
			level(t, 5, w, fmt.Sprintf("after message %d of every:3", i+1))
		}
	})

	t.Run("MarkerPulse", func(t *testing.T) {
		m := open(t, spec(6), gpio.Mode{Kind: gpio.Pulse, Width: 20 * time.Microsecond})
		t0 := gpio.MonotonicNs()
		if err := m.Mark(); err != nil {
			t.Fatal(err)
		}
		if d := gpio.MonotonicNs() - t0; d < int64(20*time.Microsecond) {
			t.Fatalf("pulse Mark returned after %d ns, want >= width 20000 ns", d)
		}
		level(t, 6, false, "after pulse")
		if m.Edges() != 2 {
			t.Fatalf("edges = %d, want 2 per pulse", m.Edges())
		}
	})

	t.Run("Busy", func(t *testing.T) {
		s := spec(2)
		s.Consumer = "conf-holder"
		m := open(t, s, gpio.Mode{})
		_, err := gpio.Open(ctx, spec(2), gpio.Mode{})
		if !errors.Is(err, gpio.ErrBusy) {
			t.Fatalf("second request: err = %v, want ErrBusy", err)
		}
		for _, want := range []string{`"conf-holder"`, "line 2", "busy"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("busy error %q does not contain %s", err, want)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); !errors.Is(err, gpio.ErrClosed) {
			t.Fatalf("second Close: %v, want ErrClosed", err)
		}
		m2, err := gpio.Open(ctx, spec(2), gpio.Mode{})
		if err != nil {
			t.Fatalf("request after release: %v", err)
		}
		m2.Close()
	})

	t.Run("OffsetOutOfRange", func(t *testing.T) {
		n := h.Lines()
		_, err := gpio.Open(ctx, spec(n), gpio.Mode{})
		if !errors.Is(err, gpio.ErrOffsetRange) {
			t.Fatalf("err = %v, want ErrOffsetRange", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("line %d", n)) {
			t.Errorf("error %q does not name the line", err)
		}
		_, err = gpio.Watch(ctx, spec(n))
		if !errors.Is(err, gpio.ErrOffsetRange) {
			t.Fatalf("watch: err = %v, want ErrOffsetRange", err)
		}
	})

	t.Run("LineByName", func(t *testing.T) {
		name := h.LineName(0)
		if name == "" {
			t.Skip("chip does not name line 0")
		}
		s := spec(0)
		s.Line = name
		m := open(t, s, gpio.Mode{})
		if m.Offset() != 0 {
			t.Fatalf("line %q resolved to offset %d, want 0", name, m.Offset())
		}
		s.Line = "no-such-line-xyz"
		if _, err := gpio.Open(ctx, s, gpio.Mode{}); !errors.Is(err, gpio.ErrLineNotFound) {
			t.Fatalf("unknown name: err = %v, want ErrLineNotFound", err)
		}
	})

	t.Run("WatchEdges", func(t *testing.T) {
		if err := h.Pull(3, false); err != nil {
			t.Fatal(err)
		}
		const n = 200
		w, err := gpio.WatchWith(ctx, &gpio.WatchOptions{}, spec(3))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		// Each edge is read before the next pull. Pulling ahead tests the
		// kernel, not this package: gpiolib-cdev reads a both-edges line's
		// direction when its IRQ thread runs, and merges two interrupts
		// into one event when that thread is late (gpio-sim under TCG on a
		// loaded host reported the first of two quick pulls as falling).
		var prev gpio.Edge
		for i := range n {
			before := gpio.MonotonicNs()
			if err := h.Pull(3, i%2 == 0); err != nil {
				t.Fatal(err)
			}
			after := gpio.MonotonicNs()
			rctx, cancel := context.WithTimeout(ctx, waitFor)
			var e gpio.Edge
			err := w.ReadEdge(rctx, &e)
			cancel()
			if err != nil {
				t.Fatalf("edge %d: %v", i+1, err)
			}
			if e.Line != 3 || e.Rising != (i%2 == 0) || e.LineSeqno != uint64(i+1) || e.Seqno != uint64(i+1) || e.Clock != gpio.ClockMonotonic {
				t.Fatalf("edge %d = %v, want line 3 rising=%v seq %d/%d monotonic", i+1, e, i%2 == 0, i+1, i+1)
			}
			if e.TimestampNs < before || e.TimestampNs > after {
				t.Fatalf("edge %d timestamp %d outside its pull's window [%d, %d] on CLOCK_MONOTONIC", i+1, e.TimestampNs, before, after)
			}
			if i > 0 && e.TimestampNs < prev.TimestampNs {
				t.Fatalf("edge %d timestamp %d before edge %d's %d", i+1, e.TimestampNs, i, prev.TimestampNs)
			}
			prev = e
		}
		if w.Dropped() != 0 {
			t.Fatalf("dropped = %d, want 0", w.Dropped())
		}
	})

	t.Run("WatchTwoLines", func(t *testing.T) {
		for _, l := range []int{3, 4} {
			if err := h.Pull(l, false); err != nil {
				t.Fatal(err)
			}
		}
		w, err := gpio.Watch(ctx, spec(3), spec(4))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, l := range []int{3, 4, 3, 4} {
			if err := h.Pull(l, true); err != nil {
				t.Fatal(err)
			}
			// Wait for each edge before the next pull so the cross-line
			// order is defined.
			rctx, cancel := context.WithTimeout(ctx, waitFor)
			var e gpio.Edge
			err := w.ReadEdge(rctx, &e)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if e.Line != l || !e.Rising {
				t.Fatalf("edge %v, want rising on line %d", e, l)
			}
			if err := h.Pull(l, false); err != nil {
				t.Fatal(err)
			}
			rctx, cancel = context.WithTimeout(ctx, waitFor)
			err = w.ReadEdge(rctx, &e)
			cancel()
			if err != nil || e.Line != l || e.Rising {
				t.Fatalf("edge %v (%v), want falling on line %d", e, err, l)
			}
		}
	})

	t.Run("WatchDeadlineAndClose", func(t *testing.T) {
		w, err := gpio.Watch(ctx, spec(3))
		if err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
		var e gpio.Edge
		if err := w.ReadEdge(dctx, &e); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read without edges: err = %v, want DeadlineExceeded", err)
		}
		done := make(chan error, 1)
		go func() {
			var e gpio.Edge
			done <- w.ReadEdge(ctx, &e)
		}()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, gpio.ErrClosed) {
				t.Fatalf("pending read after Close: %v, want ErrClosed", err)
			}
		case <-time.After(waitFor):
			t.Fatal("Close did not unblock a pending ReadEdge")
		}
		if err := w.Close(); !errors.Is(err, gpio.ErrClosed) {
			t.Fatalf("second Close: %v, want ErrClosed", err)
		}
	})

	t.Run("Overflow", func(t *testing.T) {
		if err := h.Pull(7, false); err != nil {
			t.Fatal(err)
		}
		w, err := gpio.WatchWith(ctx, &gpio.WatchOptions{EventBufferSize: 4}, spec(7))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		const n = 64
		for i := range n {
			if err := h.Pull(7, i%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, waitFor)
		defer cancel()
		buf := make([]gpio.Edge, n)
		got, err := w.ReadEdges(rctx, buf)
		var oe *gpio.OverflowError
		if !errors.As(err, &oe) || !errors.Is(err, gpio.ErrOverflow) {
			t.Fatalf("read after %d edges into a 4-event buffer: err = %v, want *OverflowError", n, err)
		}
		if got == 0 || oe.Dropped == 0 || oe.Line != 7 {
			t.Fatalf("got %d edges, overflow %+v: want edges after the gap and a dropped count on line 7", got, oe)
		}
		last := buf[got-1]
		if last.LineSeqno > n || buf[0].LineSeqno <= 1 {
			t.Fatalf("line seqnos %d..%d: want a gap at the start and at most %d", buf[0].LineSeqno, last.LineSeqno, n)
		}
		if w.Dropped() != oe.Dropped {
			t.Fatalf("Dropped() = %d, overflow says %d", w.Dropped(), oe.Dropped)
		}
	})
}

// Sim is a Harness on a fresh simulated chip.
type Sim struct {
	C *gpiosim.Chip
}

// SimLabel is the label of the chips NewSim makes unless the test gives
// one: what a killed test binary left is found by it.
const SimLabel = "hilrig-gpiotest"

// reaped holds the chip directories (gpiosim.Dir) this process already
// cleared of the chips of test binaries that are gone (killed before
// their cleanup ran): once each, at the first NewSim there.
var reaped sync.Map

// NewSim creates a simulated chip with MinLines named lines ("L0".."L7")
// under a name unique to the test and removes it when the test ends. Its
// first call per chip directory in a process removes the SimLabel chips
// there whose creator is gone.
func NewSim(t testing.TB, cfg gpiosim.Config) *Sim {
	t.Helper()
	if _, done := reaped.LoadOrStore(gpiosim.Dir(cfg.Dir), true); !done {
		if gone, err := gpiosim.RemoveStale(cfg.Dir, SimLabel); len(gone) > 0 || err != nil {
			t.Logf("removed sim chips of test binaries that are gone: %v (%v)", gone, err)
		}
	}
	if cfg.Lines == 0 {
		cfg.Lines = MinLines
	}
	if cfg.Label == "" {
		cfg.Label = SimLabel
	}
	if cfg.LineNames == nil {
		for i := range cfg.Lines {
			cfg.LineNames = append(cfg.LineNames, "L"+strconv.Itoa(i))
		}
	}
	name := UniqueName(t)
	c, err := gpiosim.Create(name, cfg)
	if err != nil {
		t.Fatalf("create sim chip: %v", err)
	}
	t.Cleanup(func() { c.Remove() })
	return &Sim{C: c}
}

// UniqueName returns a chip name unique to this process and test.
func UniqueName(t testing.TB) string {
	n := strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(t.Name())
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return fmt.Sprintf("t%d-%d-%s", pidHash(), time.Now().UnixNano()%1e9, n)
}

// Chip implements Harness.
func (s *Sim) Chip() kind.Chip { return kind.SimChip(s.C.Name()) }

// Lines implements Harness.
func (s *Sim) Lines() int { return s.C.Lines() }

// Pull implements Harness.
func (s *Sim) Pull(offset int, high bool) error { return s.C.Pull(offset, high) }

// Level implements Harness.
func (s *Sim) Level(offset int) (bool, error) { return s.C.Level(offset) }

// LineName implements Harness.
func (s *Sim) LineName(offset int) string {
	li, err := s.C.LineInfo(offset)
	if err != nil {
		return ""
	}
	return li.Name
}

var _ Harness = (*Sim)(nil)

// Main runs a test binary's tests (m.Run) and then fails the run if they
// left a simulated chip file behind (LeakedChips, named on stderr). It
// returns the exit code: `func TestMain(m *testing.M) { os.Exit(gpiotest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	if left := LeakedChips(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: tests left simulated chip files behind: %v\n", left)
		code = 1
	}
	return code
}

// LeakedChips returns the chip files that NewSim made in this process and
// that still exist; TestMain calls it after m.Run to fail a run that leaks
// shared memory. It removes what it finds so the machine stays clean.
func LeakedChips() []string {
	left, _ := filepath.Glob(filepath.Join(gpiosim.Dir(""), fmt.Sprintf("%st%d-*", gpiosim.FilePrefix, pidHash())))
	for _, p := range left {
		os.Remove(p)
	}
	return left
}
