// Package gpio gives the rig's endpoints their scope markers and its
// captures their edges.
//
// A sender raises (or toggles) a GPIO line the instant before it publishes;
// a receiver does the same as the first thing in its callback; a scope, a
// logic analyzer or a capture board watching both lines measures edge to
// edge. This package provides:
//
//   - Marker (consumer-side interface) and Open, which requests an output
//     line on a real chip (GPIO character device, uAPI v2, via
//     gpio/internal/cdev) or on the simulated chip of the sim rack
//     (gpio/gpiosim, chip "sim:NAME"), with marker modes toggle, pulse and
//     every k-th message (Mode).
//   - EdgeSource (consumer-side interface) and Watch, the "software scope":
//     edges with kernel (or, on the sim chip, marker-side CLOCK_MONOTONIC)
//     timestamps and sequence numbers; dropped events are reported, never
//     silently lost.
//   - Pair, which matches the k-th sender edge with the k-th receiver edge.
//   - LineSpec, the YAML/flag-friendly line description rack fixtures carry.
//
// Errors name chip, line and cause (see errors.go and docs/gpio.md).
package gpio

import (
	"context"

	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/gpio/internal/sys"
)

// Marker marks messages on a line. Mark is the hot path: it allocates
// nothing and costs one system call per edge on a real chip (none on the
// simulated chip unless a watcher sleeps). A Marker is used by one
// goroutine; Close must not race with Mark.
type Marker interface {
	// Mark records one message according to the marker's Mode. It does
	// not block, except in pulse mode where it holds the line active for
	// the pulse width before returning.
	Mark() error
	Close() error
}

// EdgeSource yields captured edges.
type EdgeSource interface {
	// ReadEdge blocks until an edge is available, ctx is done or the
	// source is closed, and stores it in *e. An error matching
	// ErrOverflow comes with a valid edge: edges before it were lost.
	ReadEdge(ctx context.Context, e *Edge) error
	Close() error
}

// Edge is one captured level change; see the field docs for clocks and
// sequence numbers.
type Edge = core.Edge

// Clock names the clock of an edge timestamp.
type Clock = core.Clock

// Event clocks.
const (
	ClockMonotonic = core.ClockMonotonic
	ClockRealtime  = core.ClockRealtime
	ClockHTE       = core.ClockHTE
)

// Drive is the electrical drive of an output line.
type Drive = core.Drive

// Output drives.
const (
	DrivePushPull   = core.DrivePushPull
	DriveOpenDrain  = core.DriveOpenDrain
	DriveOpenSource = core.DriveOpenSource
)

// LineInfo describes a line as `hilrig gpio ls` shows it.
type LineInfo = core.LineInfo

// ChipInfo describes a chip and its lines.
type ChipInfo = core.ChipInfo

// MonotonicNs returns CLOCK_MONOTONIC in nanoseconds: the clock of
// ClockMonotonic edge timestamps, the same in every process of the
// machine. No system call (vDSO), no allocation.
func MonotonicNs() int64 { return sys.MonotonicNs() }
