package scopes

import (
	"errors"
	"fmt"
)

// Sentinels callers branch on with [errors.Is]. Driver and transport errors
// wrap one of these with the command and instrument address as context.
var (
	// ErrTimeout: the instrument did not answer within the per-command
	// timeout or the context deadline. The connection resynchronises
	// before the next command.
	ErrTimeout = errors.New("scope: timeout")
	// ErrGarbage: a reply could not be parsed (not a number, bad block
	// header, binary junk). The connection resynchronises before the next
	// command.
	ErrGarbage = errors.New("scope: garbage reply")
	// ErrInstrument: the instrument reported an error in its error queue;
	// the concrete error is an [*InstrumentError] carrying its own text.
	ErrInstrument = errors.New("scope: instrument error")
	// ErrNotSupported: the instrument or driver cannot do what was asked
	// (for example an absolute threshold on a DS1000Z).
	ErrNotSupported = errors.New("scope: not supported")
	// ErrBadConfig: a [DelayConfig] or option failed validation.
	ErrBadConfig = errors.New("scope: bad configuration")
	// ErrNotConfigured: statistics were requested before ConfigureDelay.
	ErrNotConfigured = errors.New("scope: delay measurement not configured")
	// ErrClosed: the scope was used after Close, or Close was called twice.
	ErrClosed = errors.New("scope: closed")
	// ErrNoMeasurement: the instrument answered with its "no measurement"
	// value (>= 9.9E37 on Tektronix, Keysight and Rigol; "****" or "OFF" on
	// Siglent). Statistic readers turn it into a missing [Value] rather
	// than returning this error; it is returned only where a value is
	// mandatory.
	ErrNoMeasurement = errors.New("scope: no measurement")
	// ErrNoResult: ReadStats found no result at all — the instrument
	// answered its no-result value for the mean (Tektronix 9.91E37,
	// Keysight and Rigol 9.9E37, Siglent "****") or a count of 0: no delay
	// was measured since the reset (no edges, wrong channels or
	// threshold). The Stats returned alongside say what was read.
	ErrNoResult = errors.New("scope: no result")
	// ErrImplausible: ReadStats got figures that cannot be a delay
	// measurement (min above the mean, a negative deviation, a count of
	// 1 with a spread, a value beyond the timebase's span — a reply in
	// nanoseconds where seconds are meant —, all zero as a channel timed
	// against itself gives). The concrete error is an
	// [*ImplausibleError] naming the rule and the reply; no figure of
	// that read is returned.
	ErrImplausible = errors.New("scope: implausible reading refused")
	// ErrStatsReset: the statistics were cleared or lost acquisitions
	// during the measurement (another client's reset, a rolling window):
	// the count went backwards or fell short of what the elapsed time
	// implies, or the extremes narrowed. [*ResetError] says which.
	ErrStatsReset = errors.New("scope: statistics reset during the measurement")
	// ErrWrongInstrument: *IDN? names a vendor or model family the driver
	// does not support; the message names what answered and what the
	// driver supports.
	ErrWrongInstrument = errors.New("scope: wrong instrument for this driver")
)

// InstrumentError is one entry of an instrument's error or event queue, with
// the instrument's own text preserved verbatim. It matches [ErrInstrument]
// under [errors.Is].
type InstrumentError struct {
	// Code is the instrument's numeric code (SCPI -113, Tektronix event
	// 113, ...); 0 when the instrument gives none.
	Code int
	// Text is the instrument's message, unquoted but otherwise verbatim.
	Text string
	// After names the command (or configuration step) after which the
	// queue was checked, for context.
	After string
}

// Error implements error.
func (e *InstrumentError) Error() string {
	if e.After != "" {
		return fmt.Sprintf("scope error %d %q (after %s)", e.Code, e.Text, e.After)
	}
	return fmt.Sprintf("scope error %d %q", e.Code, e.Text)
}

// Is reports whether target is [ErrInstrument].
func (e *InstrumentError) Is(target error) bool { return target == ErrInstrument }

// ImplausibleError is a statistics read refused by [Stats.CheckPlausible]:
// the rule it broke, the statistic that broke it and, filled by the
// driver, the instrument reply that carried it. It matches
// [ErrImplausible] under [errors.Is].
type ImplausibleError struct {
	// Rule is the rule broken, e.g. "min ≤ mean ≤ max".
	Rule string
	// Field is the statistic that broke it: "mean", "min", "max",
	// "stddev" or "count".
	Field string
	// Reply is the query and the instrument's reply carrying Field
	// (verbatim, clipped); empty when unknown.
	Reply string
}

// Error implements error.
func (e *ImplausibleError) Error() string {
	s := fmt.Sprintf("%v: %s breaks %s", ErrImplausible, e.Field, e.Rule)
	if e.Reply != "" {
		s += " (reply " + e.Reply + ")"
	}
	return s
}

// Is reports whether target is [ErrImplausible].
func (e *ImplausibleError) Is(target error) bool { return target == ErrImplausible }
