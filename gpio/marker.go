package gpio

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/internal/cdev"
	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/gpio/internal/sys"
)

// output is what a backend offers for an output line.
type output interface {
	Set(active bool) error
	Close() error
	Offset() int
}

// Output is a requested output line used as a marker. It is not safe for
// concurrent use: one goroutine marks; Close must not race with Mark.
type Output struct {
	out    output
	spec   LineSpec
	mode   Mode
	every  uint64
	active bool
	msgs   uint64
	edges  uint64
	closed bool
}

var _ Marker = (*Output)(nil)

// Open requests spec's line as an output, driven inactive, on a real chip
// or, for "sim:NAME", on the simulated chip, and returns a marker in mode.
// It blocks for the request's system calls only; ctx is checked first.
// Errors are *LineError wrapping ErrChipMissing, ErrOffsetRange,
// ErrLineNotFound, ErrBusy, ErrPermission, ErrKernelTooOld or
// ErrInvalidSpec.
func Open(ctx context.Context, spec LineSpec, mode Mode) (*Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := mode.Validate(); err != nil {
		return nil, err
	}
	req, err := spec.request()
	if err != nil {
		return nil, err
	}
	var out output
	if spec.IsSim() {
		chip, err := gpiosim.Open(req.Chip)
		if err != nil {
			return nil, core.WithLine(err, "request output", &req)
		}
		o, err := chip.RequestOutput(req, false)
		chip.Close() // the output keeps its own reference to the mapping
		if err != nil {
			return nil, err
		}
		out = o
	} else {
		o, err := cdev.RequestOutput(req, false)
		if err != nil {
			return nil, err
		}
		out = o
	}
	every := uint64(1)
	if mode.Every > 1 {
		every = uint64(mode.Every)
	}
	return &Output{out: out, spec: spec, mode: mode, every: every}, nil
}

// Spec returns the spec the output was opened with.
func (o *Output) Spec() LineSpec { return o.spec }

// Mode returns the marker mode.
func (o *Output) Mode() Mode { return o.mode }

// Offset returns the resolved line offset.
func (o *Output) Offset() int { return o.out.Offset() }

// Marks returns the number of Mark calls; Edges the edges driven by Mark
// and Set.
func (o *Output) Marks() uint64 { return o.msgs }

// Edges returns the number of level changes driven.
func (o *Output) Edges() uint64 { return o.edges }

var errMarkClosed = fmt.Errorf("gpio: mark: %w", ErrClosed)

// Mark marks one message according to the mode: toggle flips the line;
// pulse drives it active, busy-waits Mode.Width and drives it inactive;
// with Every = k only messages 1, k+1, 2k+1, ... touch the line. One system
// call per edge on a real chip, none on the simulated chip unless a watcher
// sleeps; no allocation.
func (o *Output) Mark() error {
	if o.closed {
		return errMarkClosed
	}
	o.msgs++
	if o.every > 1 && (o.msgs-1)%o.every != 0 {
		return nil
	}
	if o.mode.Kind == Toggle {
		o.active = !o.active
		o.edges++
		return o.out.Set(o.active)
	}
	if err := o.out.Set(true); err != nil {
		return err
	}
	o.edges++
	hold(o.mode.Width)
	o.edges++
	return o.out.Set(false)
}

// hold waits d on the caller's goroutine: a sleep for the bulk of long
// widths, then a spin on CLOCK_MONOTONIC so µs widths are exact instead of
// rounded up to the scheduler's granularity.
func hold(d time.Duration) {
	end := sys.MonotonicNs() + int64(d)
	if d > 200*time.Microsecond {
		time.Sleep(d - 100*time.Microsecond)
	}
	for sys.MonotonicNs() < end {
	}
}

// Set drives the line to a logical level directly (wiring checks, scope
// set-up); it bypasses the mode and resets toggle state to the level.
func (o *Output) Set(active bool) error {
	if o.closed {
		return errMarkClosed
	}
	if active != o.active {
		o.edges++
	}
	o.active = active
	return o.out.Set(active)
}

// Close releases the line. A second Close returns ErrClosed.
func (o *Output) Close() error {
	if o.closed {
		return ErrClosed
	}
	o.closed = true
	return o.out.Close()
}
