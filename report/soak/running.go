package soak

import "github.com/hilrig/hilrig/report"

// Bound kinds of the running verdict: the closed vocabulary of [Running]
// (and of the live endpoint's bound label). Each is one kind of [Bounds]
// entry, never a stream or board, so the label stays bounded.
const (
	BoundLost            = "lost"             // Bounds.MaxLost, per stream (nil: zero loss)
	BoundWindowMax       = "window_max"       // Bounds.MaxLatency
	BoundUnlockedWindows = "unlocked_windows" // Bounds.MaxUnlockedWindows
	BoundFaultWindows    = "fault_windows"    // Bounds.MaxFaultWindows
	BoundRestartRecovery = "restart_recovery" // Bounds.MaxRestartRecovery
)

// RunningBounds lists every bound kind [Running] can report, in the
// order it reports them.
var RunningBounds = []string{BoundLost, BoundWindowMax, BoundUnlockedWindows, BoundFaultWindows, BoundRestartRecovery}

// RunningCheck is the state of one bound kind so far.
type RunningCheck struct {
	// Bound is one of [RunningBounds].
	Bound string
	// Verdict is report.Fail once a window broke the bound (it stays
	// failed: these bounds only get worse as windows add up), else
	// report.Pass.
	Verdict report.Verdict
}

// Running judges a soak window by window while it runs, against the
// bounds a window can break for good: loss per stream, the window max,
// PTP-unlocked windows, fault windows and restart recovery. It counts
// exactly as [Judge] does (fault windows excluded from loss and latency,
// unlocked windows from latency), so a bound it reports broken is broken
// in the final verdict too. The trend bounds (RSS slope, p50/p99 drift)
// and "nothing sent" are not judged here: a fit over part of a soak is
// not its verdict, and a stream's first window may not have sent yet;
// Judge decides them when the soak ends.
//
// Add is O(agents × streams) per window, whatever the soak's length. Not
// safe for concurrent use (the soak runner's goroutine owns it).
type Running struct {
	b                  Bounds
	lost               map[string]int64
	unlocked, faults   int
	windows            int
	windowMax, restart bool
}

// NewRunning returns a running judge of b with no window yet.
func NewRunning(b Bounds) *Running {
	return &Running{b: b, lost: map[string]int64{}}
}

// Add judges one closed window (its streams' Summary, or Histogram when
// the Summary is empty, as a Checkpointer leaves them).
func (r *Running) Add(w *Window) {
	r.windows++
	locked := w.Locked()
	if !locked {
		r.unlocked++
	}
	fault := w.Fault != nil
	if fault {
		r.faults++
	}
	for _, a := range w.Agents {
		for _, s := range a.Streams {
			if fault {
				continue
			}
			r.lost[StreamKey(a.Agent, s.Stream)] += s.Lost
			sum := s.Summary
			if sum.Count == 0 && s.Histogram != nil {
				sum = s.Histogram.Summary()
			}
			if locked && sum.Count > 0 && r.b.MaxLatency > 0 && sum.Max > int64(r.b.MaxLatency) {
				r.windowMax = true
			}
		}
		for _, e := range a.Events {
			if e.Kind == EventRestart && r.b.MaxRestartRecovery > 0 && (!e.Recovered || e.RecoveryNs > int64(r.b.MaxRestartRecovery)) {
				r.restart = true
			}
		}
	}
}

// Checks returns the state of every bound kind the soak's bounds set
// (loss always: nil MaxLost means zero loss), in [RunningBounds] order;
// nil before the first window.
func (r *Running) Checks() []RunningCheck {
	if r.windows == 0 {
		return nil
	}
	v := func(failed bool) report.Verdict {
		if failed {
			return report.Fail
		}
		return report.Pass
	}
	maxLost := int64(0)
	if r.b.MaxLost != nil {
		maxLost = *r.b.MaxLost
	}
	lost := false
	for _, n := range r.lost {
		lost = lost || n > maxLost
	}
	out := []RunningCheck{{BoundLost, v(lost)}}
	if r.b.MaxLatency > 0 {
		out = append(out, RunningCheck{BoundWindowMax, v(r.windowMax)})
	}
	if r.b.MaxUnlockedWindows != nil {
		out = append(out, RunningCheck{BoundUnlockedWindows, v(r.unlocked > *r.b.MaxUnlockedWindows)})
	}
	if r.b.MaxFaultWindows != nil {
		out = append(out, RunningCheck{BoundFaultWindows, v(r.faults > *r.b.MaxFaultWindows)})
	}
	if r.b.MaxRestartRecovery > 0 {
		out = append(out, RunningCheck{BoundRestartRecovery, v(r.restart)})
	}
	return out
}

// Verdict is the soak's verdict so far: report.Fail when a check failed,
// report.Pass when all held, report.NoBounds before the first window.
func (r *Running) Verdict() report.Verdict {
	cs := r.Checks()
	if len(cs) == 0 {
		return report.NoBounds
	}
	for _, c := range cs {
		if c.Verdict == report.Fail {
			return report.Fail
		}
	}
	return report.Pass
}
