package scopes

import (
	"fmt"
	"math"
)

// ResetWatch follows successive [Stats] reads of one measurement (after
// one reset) and reports when the statistics were reset by someone else,
// or lost acquisitions, between them: a shared lab scope's other client
// resetting 1.3 s into a 2 s measurement left a count of 302–392 instead
// of about 2,000, and nothing said so. The zero value is ready; set
// Continuous when acquisitions arrive at a steady rate throughout (a
// free-running signal), which enables the shortfall rule. Not safe for
// concurrent use.
type ResetWatch struct {
	// Continuous: the count should grow with the elapsed time, so a count
	// below half of what the earlier reads' rate implies is a reset.
	Continuous bool
	prev       Stats
	have       bool
}

// ResetError is what [ResetWatch.Observe] found; it matches
// [ErrStatsReset] under [errors.Is].
type ResetError struct {
	// What says which rule and the figures, e.g. "count went backwards
	// from 1203 to 97".
	What string
}

// Error implements error.
func (e *ResetError) Error() string { return fmt.Sprintf("%v: %s", ErrStatsReset, e.What) }

// Is reports whether target is [ErrStatsReset].
func (e *ResetError) Is(target error) bool { return target == ErrStatsReset }

// Observe checks s against the previous read and remembers it. Rules: the
// count never goes backwards; with Continuous, it does not fall below
// half of the earlier rate (count over the longest elapsed time) times
// the shortest elapsed time of s; and while the window keeps every
// acquisition (all since the reset, the first N, the last N before N are
// counted, or unknown — a DS1000Z reports no count), the minimum never
// rises and the maximum never falls (beyond the printed digits). It
// returns a [*ResetError] for the first broken rule.
func (w *ResetWatch) Observe(s Stats) error {
	prev, had := w.prev, w.have
	w.prev, w.have = s, true
	if !had {
		return nil
	}
	if prev.Count.OK && s.Count.OK && s.Count.N < prev.Count.N {
		return &ResetError{What: fmt.Sprintf("count went backwards from %d to %d (%s)", prev.Count.N, s.Count.N, s.Elapsed)}
	}
	capped := (s.Window.Kind == WindowFirst || s.Window.Kind == WindowLast) && s.Window.N > 0 &&
		(!s.Count.OK || s.Count.N >= s.Window.N)
	if w.Continuous && !capped && prev.Count.OK && s.Count.OK && prev.Elapsed.OK && s.Elapsed.OK && prev.Elapsed.Max > 0 {
		rate := float64(prev.Count.N) / prev.Elapsed.Max.Seconds()
		if want := rate * s.Elapsed.Min.Seconds() / 2; float64(s.Count.N) < want {
			return &ResetError{What: fmt.Sprintf("count %d over %s falls short of the %.0f the earlier rate (%d over %s) implies",
				s.Count.N, s.Elapsed, want, prev.Count.N, prev.Elapsed)}
		}
	}
	if capped && s.Window.Kind == WindowLast {
		return nil // a full rolling window drops extremes by design
	}
	tol := roundSlack * math.Max(math.Abs(prev.Min.V), math.Abs(prev.Max.V))
	if prev.Min.OK && s.Min.OK && s.Min.V > prev.Min.V+tol {
		return &ResetError{What: fmt.Sprintf("the minimum rose from %s to %s: earlier acquisitions are gone", FormatSeconds(prev.Min.V), FormatSeconds(s.Min.V))}
	}
	if prev.Max.OK && s.Max.OK && s.Max.V < prev.Max.V-tol {
		return &ResetError{What: fmt.Sprintf("the maximum fell from %s to %s: earlier acquisitions are gone", FormatSeconds(prev.Max.V), FormatSeconds(s.Max.V))}
	}
	return nil
}
