package gpio

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/internal/cdev"
	"github.com/hilrig/hilrig/gpio/internal/core"
)

// WatchOptions tune a watch; nil means defaults.
type WatchOptions struct {
	// Clock of the edge timestamps. Real chips: monotonic (default),
	// realtime, or HTE where the kernel and hardware offer it (else
	// ErrNotSupported). Simulated chip: monotonic, or realtime derived
	// from monotonic with the offset sampled at Watch.
	Clock Clock
	// EventBufferSize is the kernel event buffer in events (0 = kernel
	// default, 16 per line); on the simulated chip the number of edges per
	// line a reader may lag before the oldest are dropped (0 = ring size).
	EventBufferSize int
}

type watchBackend interface {
	ReadEdges(ctx context.Context, dst []Edge) (int, error)
	Close() error
	Dropped() uint64
	Offsets() []int
}

// Watcher reads edges of one or more lines of one chip. Reads must come
// from one goroutine at a time; Close may be called from any goroutine
// and makes a pending read return ErrClosed.
//
// Clock: as requested (WatchOptions.Clock), stated in every Edge.
// Ordering: per line strictly in order of occurrence; across lines in
// kernel order on real chips, and by timestamp among the edges already
// published on the simulated chip (two markers racing in different
// processes may appear out of order across lines by their publication
// delay, tens of ns).
// Overflow: when the reader falls behind the event buffer the oldest
// edges are dropped; the next read returns the edges after the gap
// together with an *OverflowError (errors.Is(err, ErrOverflow)), and
// Seqno/LineSeqno jump by the number lost.
type Watcher struct {
	b    watchBackend
	chip string
}

var _ EdgeSource = (*Watcher)(nil)

// Watch starts capturing both edges of the lines in specs, which must all
// be on one chip. Only edges after Watch returns are captured. On a real
// chip the lines are requested as inputs (exclusive, like gpiomon); on the
// simulated chip the watch is a passive probe that also sees lines other
// processes drive as outputs.
func Watch(ctx context.Context, specs ...LineSpec) (*Watcher, error) {
	return WatchWith(ctx, nil, specs...)
}

// WatchWith is Watch with options.
func WatchWith(ctx context.Context, opts *WatchOptions, specs ...LineSpec) (*Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("gpio: watch: no lines given: %w", ErrInvalidSpec)
	}
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	reqs := make([]coreRequest, len(specs))
	for i, s := range specs {
		if s.Chip != specs[0].Chip {
			return nil, fmt.Errorf("gpio: watch: lines on chips %q and %q: one watch covers one chip (start one watch per chip): %w", specs[0].Chip, s.Chip, ErrInvalidSpec)
		}
		r, err := s.request()
		if err != nil {
			return nil, err
		}
		r.Clock = o.Clock
		r.EventBufferSize = o.EventBufferSize
		reqs[i] = r
	}
	var b watchBackend
	if specs[0].IsSim() {
		chip, err := gpiosim.Open(reqs[0].Chip)
		if err != nil {
			return nil, core.WithLine(err, "watch", &reqs[0])
		}
		w, err := chip.Watch(reqs, &gpiosim.WatchOptions{Clock: o.Clock, EventBufferSize: o.EventBufferSize})
		chip.Close() // the watcher keeps its own reference to the mapping
		if err != nil {
			return nil, err
		}
		b = w
	} else {
		w, err := cdev.Watch(reqs)
		if err != nil {
			return nil, err
		}
		b = w
	}
	return &Watcher{b: b, chip: specs[0].Chip.String()}, nil
}

// ReadEdge blocks until an edge is available, ctx is done (returns
// ctx.Err()) or the watcher is closed (ErrClosed), and stores it in *e.
// An error matching ErrOverflow comes with a valid *e: edges before it
// were lost. No allocation except on overflow.
func (w *Watcher) ReadEdge(ctx context.Context, e *Edge) error {
	_, err := w.b.ReadEdges(ctx, unsafe.Slice(e, 1))
	return err
}

// ReadEdges blocks like ReadEdge until at least one edge is available,
// then fills dst with as many available edges as fit and returns the
// count. With an ErrOverflow error, the n edges returned are valid.
func (w *Watcher) ReadEdges(ctx context.Context, dst []Edge) (int, error) {
	return w.b.ReadEdges(ctx, dst)
}

// Dropped returns the number of edges lost so far.
func (w *Watcher) Dropped() uint64 { return w.b.Dropped() }

// Offsets returns the resolved offsets in the order of the specs.
func (w *Watcher) Offsets() []int { return w.b.Offsets() }

// Close ends the watch. A second Close returns ErrClosed.
func (w *Watcher) Close() error { return w.b.Close() }
