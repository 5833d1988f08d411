package scopesim

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hilrig/hilrig/gpio"
)

// GPIOSource feeds a simulator channel from one GPIO line — on the sim
// rack a line of the simulated chip ("sim:NAME", a passive probe that sees
// the markers other processes drive), on a real board a chip line. Edge
// times are CLOCK_MONOTONIC nanoseconds, so every GPIOSource of one
// simulator shares a clock, as the channels of a real scope do.
type GPIOSource struct {
	w         *gpio.Watcher
	spec      gpio.LineSpec
	overflows atomic.Uint64
	edge      gpio.Edge
}

var _ EdgeSource = (*GPIOSource)(nil)

// WatchGPIO starts watching spec's line; only edges after it returns are
// seen. Close it when the simulator is closed.
func WatchGPIO(ctx context.Context, spec gpio.LineSpec) (*GPIOSource, error) {
	w, err := gpio.WatchWith(ctx, &gpio.WatchOptions{Clock: gpio.ClockMonotonic}, spec)
	if err != nil {
		return nil, fmt.Errorf("scopesim: watch %s/%s: %w", spec.Chip, spec.Line, err)
	}
	return &GPIOSource{w: w, spec: spec}, nil
}

// ReadEdge implements [EdgeSource]. When the watcher overflowed (edges
// lost because the simulator fell behind) the edge after the gap is still
// returned and [GPIOSource.Overflows] counts the event, because a scope
// that misses edges keeps measuring; the lost edges are simply absent
// from its statistics, which the count comparison of
// [scopes.CrossValidate] exposes.
func (g *GPIOSource) ReadEdge(ctx context.Context) (int64, bool, error) {
	err := g.w.ReadEdge(ctx, &g.edge)
	if err != nil {
		if !errors.Is(err, gpio.ErrOverflow) {
			return 0, false, err
		}
		g.overflows.Add(1)
	}
	return g.edge.TimestampNs, g.edge.Rising, nil
}

// Overflows counts reads that reported lost edges. Safe for concurrent use.
func (g *GPIOSource) Overflows() uint64 { return g.overflows.Load() }

// Close stops the watch; a pending ReadEdge returns an error.
func (g *GPIOSource) Close() error { return g.w.Close() }
