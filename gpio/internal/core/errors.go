package core

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels; package gpio re-exports them. Compare with errors.Is.
var (
	ErrChipMissing  = errors.New("gpio chip not found")
	ErrOffsetRange  = errors.New("line offset out of range")
	ErrLineNotFound = errors.New("line name not found")
	ErrBusy         = errors.New("line busy")
	ErrPermission   = errors.New("permission denied")
	ErrKernelTooOld = errors.New("kernel too old: GPIO character device uAPI v2 (Linux >= 5.10) required")
	ErrClosed       = errors.New("already closed")
	ErrOverflow     = errors.New("edge events dropped")
	ErrNotSupported = errors.New("not supported")
	ErrInvalidSpec  = errors.New("invalid line spec")
)

// LineError is an error of one line request: it names the chip, the line
// and the cause. Kind is one of the sentinels; Err the underlying error
// (an errno, for instance) or nil.
type LineError struct {
	Op   string // "request output", "watch", "open chip", ...
	Chip string // chip as the user named it, and resolved path when known
	Line string // "line 3" or `line "MARK"`; empty for chip-level errors
	Kind error  // sentinel
	// Consumer is the label of the holder, for ErrBusy.
	Consumer string
	// Group is the group that owns the device, for ErrPermission.
	Group string
	// Detail is free text appended after the cause.
	Detail string
	Err    error
}

// Error formats "gpio: OP CHIP LINE: CAUSE (detail): underlying error".
func (e *LineError) Error() string {
	var b strings.Builder
	b.WriteString("gpio: ")
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(e.Chip)
	if e.Line != "" {
		b.WriteString(" ")
		b.WriteString(e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	switch {
	case errors.Is(e.Kind, ErrBusy):
		if e.Consumer != "" {
			fmt.Fprintf(&b, " (held by consumer %q)", e.Consumer)
		} else {
			b.WriteString(" (held by an unnamed consumer)")
		}
	case errors.Is(e.Kind, ErrPermission):
		if e.Group != "" {
			fmt.Fprintf(&b, " (device is owned by group %q: add the user to it, e.g. usermod -aG %s $USER)", e.Group, e.Group)
		}
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil && !errors.Is(e.Err, e.Kind) && e.Err.Error() != e.Kind.Error() {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the underlying error.
func (e *LineError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// OverflowError reports edges lost because the reader fell behind. The
// edge returned with it (if any) is valid: reading continues after the gap.
type OverflowError struct {
	Chip    string
	Line    int
	Dropped uint64
}

// Error names the chip, the line and the number of edges lost.
func (e *OverflowError) Error() string {
	return fmt.Sprintf("gpio: watch %s line %d: %d edge events dropped (reader fell behind the event buffer)", e.Chip, e.Line, e.Dropped)
}

// Unwrap returns ErrOverflow.
func (e *OverflowError) Unwrap() error { return ErrOverflow }

// WithLine fills in the operation and line of a chip-level *LineError (one
// raised while opening the chip) so the message names the line the caller
// asked for. Other errors are returned unchanged.
func WithLine(err error, op string, req *Request) error {
	var le *LineError
	if errors.As(err, &le) && le.Line == "" {
		le.Op = op
		le.Line = req.LineRef()
	}
	return err
}
