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
// the order [Tracker] documents and the first failing one is reported.
// The numbering is stable (values are appended), names are what
// MarshalText writes.
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
	// ingress time and the offset with.
	CondNoPreviousPoll
	// CondIngressStale: the last Sync ingress time did not advance since
	// the previous poll (Syncs stopped: the GM died or the link broke;
	// ptp4l keeps reporting SLAVE with a frozen offset for seconds), or
	// went back (ptp4l reset it: it chose a master anew).
	CondIngressStale
	// CondOffsetOutOfBound: |offset from master| exceeds the bound.
	CondOffsetOutOfBound
	// CondNotMeasured: mean path delay is 0, i.e. no Delay_Resp since
	// ptp4l started or reset its data sets; ptp4l then reports offset 0,
	// which is "unknown", not "perfect".
	CondNotMeasured
	// CondGMAbsent: ptp4l reports gmPresent false (it follows no
	// grandmaster; its own clock is the best it knows).
	CondGMAbsent
	// CondOffsetStale: the offset is not (yet) a fresh measurement. ptp4l
	// never clears TIME_STATUS_NP master_offset: after a fault (GM
	// restart, link flap, cold start) Syncs arrive and the port is SLAVE
	// again for a second or more while the offset is still the one from
	// before the fault (or 0, never measured), until a Delay_Resp lets it
	// measure again. Lock needs [FreshMeasurements] offset changes after
	// the last fault, and CURRENT_DATA_SET's offset to agree with it.
	CondOffsetStale
	// CondClockChanged: the answering clock's own identity is not the
	// one the lock was earned with (another ptp4l answers on the socket,
	// or its clock identity changed). Lock must be earned anew from it.
	CondClockChanged
	// CondPortFlapped: the port is SLAVE now but ptp4l notified state
	// changes since the previous poll (it left SLAVE and came back), or
	// notifications were lost.
	CondPortFlapped
	// CondGMClassRefused: the grandmaster's clockClass is not one the
	// rack accepts ([LockPolicy.GMClasses]); 255 (slave-only) never is.
	CondGMClassRefused
	// CondGMQualityChanged: the grandmaster's clockQuality changed since
	// the previous poll (it lost or regained its reference): a loss of
	// lock until fresh offsets follow.
	CondGMQualityChanged
	// CondPathDelayOutOfBound: the mean path delay is negative (a broken
	// timestamp or an asymmetric path, not a distance) or above
	// [LockPolicy.MaxPathDelay].
	CondPathDelayOutOfBound
)

var condNames = [...]string{"locked", "read-error", "not-slave", "wrong-gm", "no-previous-poll", "ingress-stale",
	"offset-out-of-bound", "not-measured", "gm-absent", "offset-stale", "clock-changed", "port-flapped",
	"gm-class-refused", "gm-quality-changed", "path-delay-out-of-bound"}

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

// FreshMeasurements is how many new offset measurements a [Tracker] must
// see after a fault (and after its first poll) before it calls a board
// locked. A new measurement is a poll whose Sync ingress time advanced
// and whose offset differs from the previous poll's: ptp4l holds the old
// value until it measures, and two independent measurements of a real
// clock are practically never equal to the nanosecond. Two, not one: the
// first offset after a reset rests on a single path-delay sample.
const FreshMeasurements = 2

// LockPolicy is what a rack accepts of a board's grandmaster and path,
// beyond the offset bound (fixtures: the rack's ptp section). The zero
// value accepts any grandmaster clockClass but 255 and a mean path delay
// in [0, [DefaultMaxPathDelay]].
type LockPolicy struct {
	// GMClasses lists the accepted grandmaster clockClass values, e.g.
	// 6 and 7 for a lab's GPS-locked grandmaster, 248 for the sim rack's
	// free-running ptp4l grandmaster. Empty: any but 255, which (slave-
	// only) is never accepted and may not be listed.
	GMClasses []uint8
	// MaxPathDelay is the largest acceptable mean path delay
	// (0 → [DefaultMaxPathDelay]). A negative one is never accepted.
	MaxPathDelay time.Duration
}

// DefaultMaxPathDelay bounds the mean path delay when the rack states no
// bound: a rack's boards share a LAN, where a path delay is µs (2–3 µs
// over the sim rack's veth with software timestamps, well under 1 µs
// through a switch with hardware ones); a millisecond is no LAN.
const DefaultMaxPathDelay = time.Millisecond

// Validate checks the policy (the error wraps [ErrBadConfig] and names
// the field).
func (p *LockPolicy) Validate() error {
	for _, c := range p.GMClasses {
		if c == ClassSlaveOnly {
			return fmt.Errorf("%w: LockPolicy.GMClasses: clockClass 255 is a slave-only clock and never an acceptable grandmaster", ErrBadConfig)
		}
	}
	if p.MaxPathDelay < 0 {
		return fmt.Errorf("%w: LockPolicy.MaxPathDelay %v must be ≥ 0 (0: %v)", ErrBadConfig, p.MaxPathDelay, DefaultMaxPathDelay)
	}
	return nil
}

// acceptsClass reports whether clockClass c is acceptable.
func (p *LockPolicy) acceptsClass(c uint8) bool {
	if c == ClassSlaveOnly {
		return false
	}
	if len(p.GMClasses) == 0 {
		return true
	}
	for _, a := range p.GMClasses {
		if a == c {
			return true
		}
	}
	return false
}

func (p *LockPolicy) maxPathDelay() time.Duration {
	if p.MaxPathDelay > 0 {
		return p.MaxPathDelay
	}
	return DefaultMaxPathDelay
}

func (p *LockPolicy) classes() string {
	if len(p.GMClasses) == 0 {
		return "any but 255"
	}
	return strings.Trim(fmt.Sprint(p.GMClasses), "[]")
}

// Tracker judges one board's successive samples. Lock belongs to one
// answering clock following one grandmaster: a board is locked only
// when, in this order (the first failure is the verdict's Condition):
//
//  1. the read succeeded;
//  2. the answering clock's identity is the one seen before (another
//     ptp4l answering on the socket is a new clock);
//  3. the port state is SLAVE;
//  4. the port stayed SLAVE since the previous poll: ptp4l notified no
//     state change and none was lost ([Status.PortEvents]; readers
//     without a subscription see only the polls);
//  5. the grandmaster is the expected one (the fixture's, or else the
//     first one seen in SLAVE state);
//  6. ptp4l reports gmPresent;
//  7. the grandmaster's clockClass is accepted ([LockPolicy]; 255 never);
//  8. its clockQuality is the one seen at the previous poll;
//  9. there was a previous successful poll;
//  10. the last Sync ingress time advanced since it;
//  11. a path delay has been measured (before the first Delay_Resp ptp4l
//     reports offset 0);
//  12. the mean path delay is ≥ 0 and ≤ the policy's bound;
//  13. the offset is a fresh measurement: ptp4l has not reset its data
//     sets without measuring since ([Status.DataSetsReset]: CURRENT_DATA_SET's
//     offset zeroed, TIME_STATUS_NP's kept), and [FreshMeasurements] new
//     offsets were seen since the last fault;
//  14. |offset| ≤ bound.
//
// A fault — a read error, another answering clock, any state but SLAVE,
// a port that left SLAVE between polls, another grandmaster, gmPresent
// false, a refused or changed grandmaster quality, the ingress time going
// back (ptp4l chose its master anew), path delay 0 or out of bound, or
// the data sets reset — restarts the count of fresh measurements. A stale
// ingress alone does not: it is also what a poll between two Syncs sees.
//
// Once the count is reached, a repeated offset no longer unlocks (with
// hardware timestamping a locked servo does repeat values). Without a
// port-state subscription a fault the polls do not see (the port left
// SLAVE and came back between two polls) can go unnoticed.
// Not safe for concurrent use: one Tracker per board per poller.
type Tracker struct {
	bound      time.Duration
	policy     LockPolicy
	expectedGM ClockIdentity
	learned    bool

	// clock is the answering clock's identity (0: none seen yet); gmQ
	// the grandmaster quality at the previous SLAVE poll (haveQ).
	clock ClockIdentity
	gmQ   ClockQuality
	haveQ bool

	prevIngress int64
	prevOffset  time.Duration
	havePrev    bool

	// fresh counts new offset measurements since the last fault, up to
	// FreshMeasurements; fault says what that fault was.
	fresh   int
	fault   string
	faultAt time.Time
}

// NewTracker returns a Tracker. expectedGM 0 means "the first grandmaster
// seen while SLAVE". bound is the largest acceptable |offset|; 0 means
// [DefaultBound] of each sample's Sync ingress clock (20 µs with software
// timestamping, 1 µs with hardware), since a fixed 1 µs flaps on software
// timestamps. policy nil means the zero [LockPolicy]; it is copied, and
// should have passed [LockPolicy.Validate] (255 is refused regardless).
func NewTracker(expectedGM ClockIdentity, bound time.Duration, policy *LockPolicy) *Tracker {
	t := &Tracker{bound: bound, expectedGM: expectedGM, learned: expectedGM != 0, fault: "the first poll"}
	if policy != nil {
		t.policy = LockPolicy{GMClasses: append([]uint8(nil), policy.GMClasses...), MaxPathDelay: policy.MaxPathDelay}
	}
	return t
}

// ExpectedGM returns the grandmaster the board must follow (0 until learned).
func (t *Tracker) ExpectedGM() ClockIdentity { return t.expectedGM }

// restart records a fault: fresh measurements are counted anew from here.
func (t *Tracker) restart(why string, at time.Time) {
	t.fresh, t.fault, t.faultAt = 0, why, at
}

// Observe judges one poll result. Call it once per poll, in order: the
// ingress and offset checks compare with the previous successful poll.
func (t *Tracker) Observe(st Status, err error) Verdict {
	if err != nil {
		t.restart("a read error", st.ReadAt)
		return Verdict{Cond: CondReadError, Detail: err.Error()}
	}
	if t.clock != 0 && st.ClockIdentity != t.clock {
		// Another clock answers: nothing measured from the old one says
		// anything about it, so compare nothing with the old one either.
		prev := t.clock
		t.clock, t.havePrev, t.haveQ = st.ClockIdentity, false, false
		t.restart("clock "+st.ClockIdentity.String()+" answering", st.ReadAt)
		return Verdict{Cond: CondClockChanged, Detail: fmt.Sprintf("the socket is answered by clock %s, the lock was earned by %s (another ptp4l, or its clock identity changed): lock needs fresh offsets from it", st.ClockIdentity, prev)}
	}
	t.clock = st.ClockIdentity
	prevIngress, prevOffset, havePrev := t.prevIngress, t.prevOffset, t.havePrev
	t.prevIngress, t.prevOffset, t.havePrev = st.LastSyncIngress.Ns, st.Offset, true
	if st.PortState != PortStateSlave {
		t.restart("port state "+st.PortState.String(), st.ReadAt)
		return Verdict{Cond: CondNotSlave, Detail: "port state " + st.PortState.String()}
	}
	if ev := st.PortEvents; ev.Changes > 0 || ev.Lost > 0 {
		t.restart("the port leaving SLAVE", st.ReadAt)
		return Verdict{Cond: CondPortFlapped, Detail: fmt.Sprintf("port SLAVE now, but ptp4l notified %d state change(s) since the previous poll (first to %s), %d notification(s) lost: it did not stay SLAVE", ev.Changes, ev.First, ev.Lost)}
	}
	if !t.learned {
		t.expectedGM, t.learned = st.GMIdentity, true
	}
	if st.GMIdentity != t.expectedGM {
		t.haveQ = false
		t.restart("grandmaster "+st.GMIdentity.String(), st.ReadAt)
		return Verdict{Cond: CondWrongGM, Detail: fmt.Sprintf("grandmaster %s, want %s", st.GMIdentity, t.expectedGM)}
	}
	if !st.GMPresent {
		t.restart("gmPresent false", st.ReadAt)
		return Verdict{Cond: CondGMAbsent, Detail: "ptp4l reports gmPresent false (it follows no grandmaster)"}
	}
	prevQ, haveQ := t.gmQ, t.haveQ
	t.gmQ, t.haveQ = st.GMQuality, true
	if !t.policy.acceptsClass(st.GMQuality.Class) {
		t.restart(fmt.Sprintf("grandmaster clockClass %d", st.GMQuality.Class), st.ReadAt)
		return Verdict{Cond: CondGMClassRefused, Detail: fmt.Sprintf("grandmaster %s clockClass %d refused: the rack accepts %s (255, slave-only, never)", st.GMIdentity, st.GMQuality.Class, t.policy.classes())}
	}
	if haveQ && st.GMQuality != prevQ {
		t.restart("the grandmaster quality changing", st.ReadAt)
		return Verdict{Cond: CondGMQualityChanged, Detail: fmt.Sprintf("grandmaster %s quality changed from %s to %s: lock needs fresh offsets after it", st.GMIdentity, prevQ, st.GMQuality)}
	}
	if !havePrev {
		return Verdict{Cond: CondNoPreviousPoll, Detail: "first poll: nothing to compare the Sync ingress time and the offset with"}
	}
	if st.LastSyncIngress.Ns < prevIngress {
		t.restart("the Sync ingress time going back", st.ReadAt)
		return Verdict{Cond: CondIngressStale, Detail: fmt.Sprintf("Sync ingress_time %d went back from %d (ptp4l reset it: it chose its master anew)", st.LastSyncIngress.Ns, prevIngress)}
	}
	if st.LastSyncIngress.Ns == prevIngress {
		return Verdict{Cond: CondIngressStale, Detail: fmt.Sprintf("Sync ingress_time %d not advanced since the previous poll (no Sync received)", st.LastSyncIngress.Ns)}
	}
	if st.MeanPathDelay == 0 {
		t.restart("mean path delay 0", st.ReadAt)
		return Verdict{Cond: CondNotMeasured, Detail: fmt.Sprintf("mean path delay 0 (no Delay_Resp yet): offset %v is not a measurement", st.Offset)}
	}
	if maxD := t.policy.maxPathDelay(); st.MeanPathDelay < 0 || st.MeanPathDelay > maxD {
		t.restart(fmt.Sprintf("mean path delay %v", st.MeanPathDelay), st.ReadAt)
		return Verdict{Cond: CondPathDelayOutOfBound, Detail: fmt.Sprintf("mean path delay %v outside [0, %v]: offsets computed with it are not measurements of the clock", st.MeanPathDelay, maxD)}
	}
	if st.DataSetsReset() {
		t.restart("CURRENT_DATA_SET reset", st.ReadAt)
		return Verdict{Cond: CondOffsetStale, Detail: fmt.Sprintf("CURRENT_DATA_SET offsetFromMaster %v ≠ TIME_STATUS_NP master_offset %v: ptp4l reset its data sets and has not measured an offset since", st.CurrentOffset, st.Offset)}
	}
	if t.fresh < FreshMeasurements {
		if st.Offset != prevOffset {
			t.fresh++
		}
		if t.fresh < FreshMeasurements {
			return Verdict{Cond: CondOffsetStale, Detail: t.staleDetail(st)}
		}
	}
	bound := t.bound
	if bound == 0 {
		bound = DefaultBound(st.LastSyncIngress.Clock)
	}
	if abs(st.Offset) > bound {
		return Verdict{Cond: CondOffsetOutOfBound, Detail: fmt.Sprintf("|offset| %v > bound %v (offset %v)", abs(st.Offset), bound, st.Offset)}
	}
	return Verdict{Locked: true, Cond: CondLocked}
}

func (t *Tracker) staleDetail(st Status) string {
	since := t.fault
	if !t.faultAt.IsZero() {
		since += " at " + t.faultAt.Format("15:04:05.000")
	}
	return fmt.Sprintf("offset %v: %d of %d new measurements since %s (ptp4l keeps its last offset until it measures again)",
		st.Offset, t.fresh, FreshMeasurements, since)
}

// Default lock bounds (largest acceptable |offset from master|) per
// timestamping mode, for callers that have no bound of their own (the
// rack's ptp.max_offset, a --bound flag).
//
// Software timestamping stamps packets in the kernel's network stack, so
// every offset carries scheduling and softirq noise: on the 2-vCPU test
// VM a free-running slave on a veth saw |offset| mostly < 1.4 µs, up to
// 1.9 µs, and 25–47 µs on the first measurement after a reset — a 1 µs
// bound there lost lock twice in 8 s with nothing wrong. Hardware
// timestamping with a locked servo stays within tens of ns, where 1 µs
// still catches a real fault.
const (
	DefaultBoundSoftware = 20 * time.Microsecond
	DefaultBoundHardware = time.Microsecond
)

// DefaultBound returns the default bound for a port whose Sync ingress
// times are on clock ingress: [PHC] means hardware timestamping, anything
// else (ptp4l stamps software timestamps on CLOCK_REALTIME) software.
func DefaultBound(ingress Clock) time.Duration {
	if ingress == PHC {
		return DefaultBoundHardware
	}
	return DefaultBoundSoftware
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
	// Policy is what the rack accepts of the grandmaster and the path
	// (the fixture's ptp section); the zero value: see [LockPolicy].
	Policy LockPolicy
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
	if bound < 0 || n < 1 {
		return fmt.Errorf("%w: RequireLocked bound %v, n %d: want bound ≥ 0 (0: by timestamping mode) and n ≥ 1", ErrBadConfig, bound, n)
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
		states[i].tr = NewTracker(b.ExpectedGM, bound, &b.Policy)
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
		if err := b.Policy.Validate(); err != nil {
			return fmt.Errorf("board %q: %w", b.Name, err)
		}
	}
	return nil
}
