package timesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Condition says why a sample is, or is not, locked. The checks run in
// this order and the first failing one is reported.
type Condition uint8

const (
	// CondLocked: every check passed.
	CondLocked Condition = iota
	// CondReadError: the status could not be read.
	CondReadError
	// CondNotSlave: the port state is not SLAVE.
	CondNotSlave
	// CondWrongGM: the grandmaster is not the expected (or first-seen) one.
	CondWrongGM
	// CondNoPreviousPoll: the first poll has nothing to compare the Sync
	// ingress time with.
	CondNoPreviousPoll
	// CondIngressStale: the last Sync ingress time did not advance since
	// the previous poll (Syncs stopped: the GM died or the link broke;
	// ptp4l keeps reporting SLAVE with a frozen offset for seconds).
	CondIngressStale
	// CondOffsetOutOfBound: |offset from master| exceeds the bound.
	CondOffsetOutOfBound
	// CondNotMeasured: mean path delay is still 0, i.e. no Delay_Resp yet;
	// ptp4l then reports offset 0, which is "unknown", not "perfect".
	CondNotMeasured
)

var condNames = [...]string{"locked", "read-error", "not-slave", "wrong-gm", "no-previous-poll", "ingress-stale", "offset-out-of-bound", "not-measured"}

// String returns the condition's kebab-case name.
func (c Condition) String() string {
	if int(c) < len(condNames) {
		return condNames[c]
	}
	return fmt.Sprintf("condition(%d)", uint8(c))
}

// MarshalText implements encoding.TextMarshaler.
func (c Condition) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses the names String returns.
func (c *Condition) UnmarshalText(b []byte) error {
	for i, n := range condNames {
		if n == string(b) {
			*c = Condition(i)
			return nil
		}
	}
	return fmt.Errorf("timesync: unknown condition %q", b)
}

// Verdict is the health judgement of one sample.
type Verdict struct {
	Locked bool      `json:"locked"`
	Cond   Condition `json:"condition"`
	// Detail names the failed check's values, e.g. "port state LISTENING".
	Detail string `json:"detail,omitempty"`
}

// Tracker judges one board's successive samples. A board is locked only
// when the port state is SLAVE, the grandmaster is the expected one (the
// fixture's, or else the first one seen in SLAVE state), the last Sync
// ingress time advanced since the previous poll, a path delay has been
// measured (before the first Delay_Resp ptp4l reports offset 0), and
// |offset| ≤ bound.
// Not safe for concurrent use: one Tracker per board per poller.
type Tracker struct {
	bound      time.Duration
	expectedGM ClockIdentity
	learned    bool

	prevIngress int64
	havePrev    bool
}

// NewTracker returns a Tracker. expectedGM 0 means "the first grandmaster
// seen while SLAVE". bound is the largest acceptable |offset| (> 0).
func NewTracker(expectedGM ClockIdentity, bound time.Duration) *Tracker {
	return &Tracker{bound: bound, expectedGM: expectedGM, learned: expectedGM != 0}
}

// ExpectedGM returns the grandmaster the board must follow (0 until learned).
func (t *Tracker) ExpectedGM() ClockIdentity { return t.expectedGM }

// Observe judges one poll result. Call it once per poll, in order: the
// ingress check compares with the previous successful poll.
func (t *Tracker) Observe(st Status, err error) Verdict {
	if err != nil {
		return Verdict{Cond: CondReadError, Detail: err.Error()}
	}
	prev, havePrev := t.prevIngress, t.havePrev
	t.prevIngress, t.havePrev = st.LastSyncIngress.Ns, true
	if st.PortState != PortStateSlave {
		return Verdict{Cond: CondNotSlave, Detail: "port state " + st.PortState.String()}
	}
	if !t.learned {
		t.expectedGM, t.learned = st.GMIdentity, true
	}
	if st.GMIdentity != t.expectedGM {
		return Verdict{Cond: CondWrongGM, Detail: fmt.Sprintf("grandmaster %s, want %s", st.GMIdentity, t.expectedGM)}
	}
	if !havePrev {
		return Verdict{Cond: CondNoPreviousPoll, Detail: "first poll: nothing to compare the Sync ingress time with"}
	}
	if st.LastSyncIngress.Ns <= prev {
		return Verdict{Cond: CondIngressStale, Detail: fmt.Sprintf("Sync ingress_time %d not advanced since the previous poll (no Sync received)", st.LastSyncIngress.Ns)}
	}
	if st.MeanPathDelay == 0 {
		return Verdict{Cond: CondNotMeasured, Detail: fmt.Sprintf("mean path delay 0 (no Delay_Resp yet): offset %v is not a measurement", st.Offset)}
	}
	if abs(st.Offset) > t.bound {
		return Verdict{Cond: CondOffsetOutOfBound, Detail: fmt.Sprintf("|offset| %v > bound %v", st.Offset, t.bound)}
	}
	return Verdict{Locked: true, Cond: CondLocked}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Board is one board whose clock is watched.
type Board struct {
	// Name identifies the board in errors, events and reports.
	Name string
	// Source reads the board's PTP status.
	Source Source
	// ExpectedGM is the rack's grandmaster (from the fixture); 0 accepts
	// the first grandmaster seen.
	ExpectedGM ClockIdentity
}

// DefaultPeriod is the default poll period: longer than the default Sync
// interval (1 s, logSyncInterval 0), so every poll of a locked board sees
// at least one new Sync and "ingress advanced" is a fair test.
const DefaultPeriod = 1250 * time.Millisecond

// DefaultRequirePeriod is RequireLocked's default poll period: just over
// the default 1 s Sync interval, so the gate passes as soon as possible
// after lock. A Sync late by more than 100 ms shows as one stale sample,
// which only restarts the count (the Monitor uses the more tolerant
// DefaultPeriod because there a stale sample is a loss-of-lock event).
const DefaultRequirePeriod = 1100 * time.Millisecond

// RequireOptions tunes RequireLocked. nil means defaults.
type RequireOptions struct {
	// Period between polls (0 → DefaultRequirePeriod). Must exceed the
	// Sync interval or locked boards look stale.
	Period time.Duration
	// Logger gets one debug line per poll (nil: none).
	Logger *slog.Logger
}

// RequireLocked polls every board until each has n consecutive locked
// samples (see [Tracker]), or fails when ctx ends with an error wrapping
// [ErrNotLocked] that names each board not yet locked, the failed
// condition and the last values read. Errors that cannot heal by waiting
// (permission denied, closed source) fail at once. Blocks.
func RequireLocked(ctx context.Context, boards []Board, bound time.Duration, n int, opts *RequireOptions) error {
	if opts == nil {
		opts = &RequireOptions{}
	}
	if err := validateBoards(boards); err != nil {
		return err
	}
	if bound <= 0 || n < 1 {
		return fmt.Errorf("%w: RequireLocked bound %v, n %d: want bound > 0 and n ≥ 1", ErrBadConfig, bound, n)
	}
	period := opts.Period
	if period <= 0 {
		period = DefaultRequirePeriod
	}
	type state struct {
		tr   *Tracker
		good int
		last Status
		err  error
		v    Verdict
	}
	states := make([]state, len(boards))
	for i, b := range boards {
		states[i].tr = NewTracker(b.ExpectedGM, bound)
		states[i].v = Verdict{Cond: CondReadError, Detail: "not read before the deadline"}
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		done := true
		for i, b := range boards {
			s := &states[i]
			st, err := b.Source.Status(ctx)
			if ctx.Err() != nil {
				// A read cut short by our own deadline says nothing
				// about the board: keep the previous values for the
				// report.
				done = false
				break
			}
			s.last, s.err = st, err
			s.v = s.tr.Observe(s.last, s.err)
			if s.v.Locked {
				s.good++
			} else {
				s.good = 0
			}
			if opts.Logger != nil {
				opts.Logger.Debug("require locked", "board", b.Name, "good", s.good, "cond", s.v.Cond, "state", s.last.PortState, "offset", s.last.Offset)
			}
			if s.err != nil && (errors.Is(s.err, ErrPermission) || errors.Is(s.err, ErrClosed) || errors.Is(s.err, ErrBadConfig)) {
				return fmt.Errorf("%w: board %q: %w", ErrNotLocked, b.Name, s.err)
			}
			if s.good < n {
				done = false
			}
		}
		if done {
			return nil
		}
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
				continue
			}
		}
		{
			var msgs []string
			for i, b := range boards {
				s := &states[i]
				if s.good >= n {
					continue
				}
				msgs = append(msgs, fmt.Sprintf("board %q: %s (%s) after %d/%d good samples; last: %s", b.Name, s.v.Cond, s.v.Detail, s.good, n, describe(s.last)))
			}
			return fmt.Errorf("%w within the deadline (%w): %s", ErrNotLocked, ctx.Err(), strings.Join(msgs, "; "))
		}
	}
}

func describe(st Status) string {
	return fmt.Sprintf("state %s, offset %v, mean path delay %v, gm %s, gmPresent %t, ingress %s, read at %s",
		st.PortState, st.Offset, st.MeanPathDelay, st.GMIdentity, st.GMPresent, st.LastSyncIngress, st.ReadAt.Format("15:04:05.000"))
}

func validateBoards(boards []Board) error {
	if len(boards) == 0 {
		return fmt.Errorf("%w: no boards", ErrBadConfig)
	}
	seen := map[string]bool{}
	for i, b := range boards {
		if b.Name == "" {
			return fmt.Errorf("%w: board %d has no name", ErrBadConfig, i)
		}
		if seen[b.Name] {
			return fmt.Errorf("%w: board name %q twice", ErrBadConfig, b.Name)
		}
		seen[b.Name] = true
		if b.Source == nil {
			return fmt.Errorf("%w: board %q has no Source", ErrBadConfig, b.Name)
		}
	}
	return nil
}
