// Package core holds the vocabulary shared by package gpio and its backends
// (gpio/gpiosim, gpio/internal/cdev): edges, clocks, drive modes, the
// resolved line request and the error types. It exists only to break the
// import cycle gpio → backend → gpio; package gpio re-exports every name
// here as an alias, and callers should use those.
package core

import (
	"fmt"
	"strings"
	"time"
)

// Clock names the clock an edge timestamp was taken with.
type Clock uint8

const (
	// ClockMonotonic is CLOCK_MONOTONIC (the kernel default since Linux 5.7,
	// and the clock of the simulated chip).
	ClockMonotonic Clock = iota
	// ClockRealtime is CLOCK_REALTIME (UTC, may step when the clock is set).
	ClockRealtime
	// ClockHTE is a hardware timestamping engine (Linux ≥ 5.19 with an HTE
	// provider). Its epoch is provider-specific; compare HTE timestamps only
	// with each other.
	ClockHTE
)

var clockNames = [...]string{"monotonic", "realtime", "hte"}

// String returns "monotonic", "realtime" or "hte".
func (c Clock) String() string {
	if int(c) < len(clockNames) {
		return clockNames[c]
	}
	return fmt.Sprintf("clock(%d)", uint8(c))
}

// MarshalText implements encoding.TextMarshaler.
func (c Clock) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText accepts "monotonic", "realtime" or "hte" (case-insensitive).
func (c *Clock) UnmarshalText(b []byte) error {
	s := strings.ToLower(strings.TrimSpace(string(b)))
	for i, n := range clockNames {
		if s == n {
			*c = Clock(i)
			return nil
		}
	}
	return fmt.Errorf("gpio: unknown event clock %q (want monotonic, realtime or hte)", string(b))
}

// Drive is the electrical drive of an output line.
type Drive uint8

const (
	// DrivePushPull drives both levels (the default).
	DrivePushPull Drive = iota
	// DriveOpenDrain drives low only; high needs a pull-up.
	DriveOpenDrain
	// DriveOpenSource drives high only; low needs a pull-down.
	DriveOpenSource
)

var driveNames = [...]string{"push-pull", "open-drain", "open-source"}

// String returns "push-pull", "open-drain" or "open-source".
func (d Drive) String() string {
	if int(d) < len(driveNames) {
		return driveNames[d]
	}
	return fmt.Sprintf("drive(%d)", uint8(d))
}

// MarshalText implements encoding.TextMarshaler.
func (d Drive) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts "push-pull", "open-drain", "open-source" (also
// without the dash, case-insensitive); empty means push-pull.
func (d *Drive) UnmarshalText(b []byte) error {
	s := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(string(b))), "_", "-")
	if s == "" {
		*d = DrivePushPull
		return nil
	}
	for i, n := range driveNames {
		if s == n || s == strings.ReplaceAll(n, "-", "") {
			*d = Drive(i)
			return nil
		}
	}
	return fmt.Errorf("gpio: unknown drive %q (want push-pull, open-drain or open-source)", string(b))
}

// Edge is one level change of a line as captured.
//
// TimestampNs is in nanoseconds of Clock, taken by the kernel (or, for the
// simulated chip, by the marking process with CLOCK_MONOTONIC) at the
// instant of the change — not when user space read it.
//
// Seqno counts events across all lines of one watch (1 for the first);
// LineSeqno counts events of this line in the watch (1 for the first). Both
// count events the capture lost, so a gap (a jump by more than one) means
// edges were dropped because the reader fell behind.
type Edge struct {
	// Line is the offset of the line within its chip.
	Line int
	// Rising is true for an inactive→active change (for an active-low line,
	// a falling voltage).
	Rising bool
	// Clock is the clock of TimestampNs.
	Clock Clock
	// TimestampNs is the time of the change, in ns of Clock.
	TimestampNs int64
	// Seqno is the event's number within the watch (all lines), from 1.
	Seqno uint64
	// LineSeqno is the event's number within its line, from 1.
	LineSeqno uint64
}

// Timestamp returns TimestampNs as a time.Duration since the clock's epoch.
func (e Edge) Timestamp() time.Duration { return time.Duration(e.TimestampNs) }

// String formats the edge like gpiomon: "12345.000000678 rising line 3 seq 7/4 (monotonic)".
func (e Edge) String() string {
	dir := "falling"
	if e.Rising {
		dir = "rising"
	}
	return fmt.Sprintf("%d.%09d %-7s line %d seq %d/%d (%s)",
		e.TimestampNs/1e9, e.TimestampNs%1e9, dir, e.Line, e.Seqno, e.LineSeqno, e.Clock)
}

// Request is a fully parsed line request handed to a backend.
type Request struct {
	// Chip is the chip reference without the "sim:" prefix: a name
	// ("gpiochip0"), a path ("/dev/gpiochip0") or a label; for the
	// simulated chip, the sim chip's name.
	Chip string
	// Offset is the line offset, or -1 when Name selects the line.
	Offset int
	// Name is the line name when Offset is -1.
	Name string
	// ActiveLow inverts the logical level.
	ActiveLow bool
	// Drive is the output drive (outputs only).
	Drive Drive
	// Consumer is the label shown to other users of the chip.
	Consumer string
	// Clock is the requested event clock (inputs only).
	Clock Clock
	// EventBufferSize is the requested kernel event buffer in events; 0 =
	// kernel default (16 per line).
	EventBufferSize int
}

// LineRef formats the line as "offset 3" or "line \"MARK\"" for errors.
func (r *Request) LineRef() string {
	if r.Offset >= 0 {
		return fmt.Sprintf("line %d", r.Offset)
	}
	return fmt.Sprintf("line %q", r.Name)
}
