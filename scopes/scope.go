package scopes

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// Scope is what the harness needs from an instrument that times the
// sender's marker edge to the receiver's marker edge: identify it, set up a
// delay measurement, reset its statistics at the start of a case and read
// them at the end.
//
// All methods block on instrument I/O and honour ctx. Implementations are
// not required to be safe for concurrent use: one goroutine owns a Scope.
type Scope interface {
	// Identify returns the instrument's identity (*IDN? or equivalent).
	Identify(ctx context.Context) (Identity, error)
	// ConfigureDelay sets up the delay measurement described by cfg and
	// checks the instrument's error queue; instrument complaints come back
	// as [*InstrumentError].
	ConfigureDelay(ctx context.Context, cfg DelayConfig) error
	// ResetStats clears the accumulated statistics so that the next
	// ReadStats covers only edges seen after this call.
	ResetStats(ctx context.Context) error
	// ReadStats returns the statistics accumulated since the last reset,
	// with the window they cover and how they were kept consistent.
	// Statistics the instrument does not report, or reports as "no
	// measurement", are missing ([Value.OK] false), never invented. When
	// the instrument has no result at all (its no-result value for the
	// mean, or a count of 0) the error wraps [ErrNoResult] and the Stats
	// returned with it say what was read.
	ReadStats(ctx context.Context) (Stats, error)
}

// DelayFetcher is implemented by scopes that can return the individual
// delays behind their statistics (one per paired source/destination edge),
// so that per-message delays can be matched against software samples.
type DelayFetcher interface {
	// FetchDelays appends the delays in seconds, in edge order, to dst and
	// returns the extended slice. It blocks on instrument I/O.
	FetchDelays(ctx context.Context, dst []float64) ([]float64, error)
}

// DelayResolver is implemented by [DelayFetcher]s whose delays come from
// sampled records, so each delay is only as fine as the sample interval.
type DelayResolver interface {
	// DelayResolution returns the time resolution, in seconds, of the
	// delays the last FetchDelays returned (the coarsest sample interval
	// of the records they came from); 0 before any fetch. It does no I/O.
	DelayResolution() float64
}

// FineResolution is the finest resolution the harness asks of fetched
// delays: 0.1 % of the delay. Coarser delays are used with their
// resolution stated beside them.
const FineResolution = 1e-3

// Polarity is the edge a delay measurement starts or stops on.
type Polarity int

// Polarities.
const (
	Rising Polarity = iota
	Falling
)

// String returns "rising" or "falling".
func (p Polarity) String() string {
	switch p {
	case Rising:
		return "rising"
	case Falling:
		return "falling"
	}
	return fmt.Sprintf("Polarity(%d)", int(p))
}

// UnmarshalText accepts "rising"/"rise"/"r" and "falling"/"fall"/"f".
func (p *Polarity) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "rising", "rise", "r", "+":
		*p = Rising
	case "falling", "fall", "f", "-":
		*p = Falling
	default:
		return fmt.Errorf("%w: polarity %q (want rising or falling)", ErrBadConfig, b)
	}
	return nil
}

// DelayConfig describes one edge-to-edge delay measurement.
// The zero value of the optional fields means "leave the instrument's
// default": no threshold change, no population limit.
type DelayConfig struct {
	// Source and Dest are 1-based analog channel numbers (CH1 = 1). For a
	// logic analyzer they index its configured channel list.
	Source, Dest int
	// SourceEdge and DestEdge are the polarities the delay starts and ends on.
	SourceEdge, DestEdge Polarity
	// ThresholdV is the edge threshold in volts, applied to both channels
	// when HasThreshold is true.
	ThresholdV   float64
	HasThreshold bool
	// PopulationLimit caps how many delays the statistics accumulate after
	// a reset; 0 means the instrument default (usually unlimited).
	PopulationLimit int
}

// Validate reports the first invalid field by name.
func (c DelayConfig) Validate() error {
	switch {
	case c.Source < 1 || c.Source > 64:
		return fmt.Errorf("%w: Source channel %d out of range 1..64", ErrBadConfig, c.Source)
	case c.Dest < 1 || c.Dest > 64:
		return fmt.Errorf("%w: Dest channel %d out of range 1..64", ErrBadConfig, c.Dest)
	case c.Source == c.Dest:
		return fmt.Errorf("%w: Source and Dest are both channel %d", ErrBadConfig, c.Source)
	case c.SourceEdge != Rising && c.SourceEdge != Falling:
		return fmt.Errorf("%w: SourceEdge %v", ErrBadConfig, c.SourceEdge)
	case c.DestEdge != Rising && c.DestEdge != Falling:
		return fmt.Errorf("%w: DestEdge %v", ErrBadConfig, c.DestEdge)
	case c.HasThreshold && (math.IsNaN(c.ThresholdV) || math.IsInf(c.ThresholdV, 0) || math.Abs(c.ThresholdV) > 1000):
		return fmt.Errorf("%w: ThresholdV %v not a sane voltage", ErrBadConfig, c.ThresholdV)
	case c.PopulationLimit < 0:
		return fmt.Errorf("%w: PopulationLimit %d is negative", ErrBadConfig, c.PopulationLimit)
	}
	return nil
}

// Value is one optional statistic. V is in the statistic's unit (seconds
// for delays); OK is false when the instrument did not report it or
// reported "no measurement".
type Value struct {
	V  float64
	OK bool
}

// Some returns a present Value.
func Some(v float64) Value { return Value{V: v, OK: true} }

// String prints the value in seconds with SI prefix, or "missing".
func (v Value) String() string {
	if !v.OK {
		return "missing"
	}
	return FormatSeconds(v.V)
}

// Count is an optional population count.
type Count struct {
	N  int64
	OK bool
}

// String prints the count or "missing".
func (c Count) String() string {
	if !c.OK {
		return "missing"
	}
	return fmt.Sprint(c.N)
}

// WindowKind says which measurements a statistics window keeps.
type WindowKind int

// Window kinds.
const (
	// WindowUnknown: the instrument neither documents nor reports it.
	WindowUnknown WindowKind = iota
	// WindowAll: every measurement since the last reset.
	WindowAll
	// WindowFirst: the first N measurements after the reset; later ones
	// are not accumulated (a population limit).
	WindowFirst
	// WindowLast: a rolling window of the last N measurements; older
	// ones drop out, so the count stops at N while acquisitions go on.
	WindowLast
)

// Window is what a [Stats] covers: the instrument's statistics window as
// the driver set or read it back. N is the window size for WindowFirst
// and WindowLast.
type Window struct {
	Kind WindowKind
	N    int64
}

// String describes the window: "all acquisitions since the reset",
// "first N acquisitions after the reset", "last N acquisitions" or
// "unknown (not reported by the instrument)".
func (w Window) String() string {
	switch w.Kind {
	case WindowAll:
		return "all acquisitions since the reset"
	case WindowFirst:
		return fmt.Sprintf("first %d acquisitions after the reset", w.N)
	case WindowLast:
		if w.N <= 0 {
			return "all acquisitions since the reset (unlimited)"
		}
		return fmt.Sprintf("last %d acquisitions", w.N)
	}
	return "unknown (not reported by the instrument)"
}

// Snapshot says how the figures of one [Stats] were made to come from the
// same set of acquisitions.
type Snapshot int

// Snapshots.
const (
	// SnapshotNone: no guarantee (the figures were read one by one while
	// acquisitions continued).
	SnapshotNone Snapshot = iota
	// SnapshotOneQuery: one reply carried every figure.
	SnapshotOneQuery
	// SnapshotFrozen: acquisition was stopped for the reads and restored
	// afterwards.
	SnapshotFrozen
	// SnapshotComputed: computed at once from captured edges (no
	// instrument statistics involved).
	SnapshotComputed
)

// String describes the snapshot.
func (s Snapshot) String() string {
	switch s {
	case SnapshotOneQuery:
		return "one query"
	case SnapshotFrozen:
		return "acquisition stopped while read"
	case SnapshotComputed:
		return "computed from one capture"
	}
	return "read while acquiring (figures may cover different acquisitions)"
}

// Stats are delay statistics in seconds. StdDev is whatever the instrument
// computes (instruments do not document population vs sample); the
// software-side [StatsFromDelays] uses the population form (1/N).
type Stats struct {
	Mean, Min, Max, StdDev Value
	Count                  Count
	// Window is which measurements the figures cover.
	Window Window
	// Snapshot is how the figures were kept consistent with each other.
	Snapshot Snapshot
	// Elapsed bounds the time the figures cover since the reset.
	Elapsed Elapsed
}

// Elapsed bounds the time from a statistics reset taking effect to the
// figures being taken (acquisition stopped, or the one query answered).
// The instrument acts on each command somewhere between its sending and
// its acknowledgement, which a slow link stretches to seconds, so only
// bounds are known: Min = figures asked − reset acknowledged, Max =
// figures acknowledged − reset sent (the caller's monotonic clock). OK is
// false when unknown (no reset seen by this driver, or computed from a
// capture).
type Elapsed struct {
	Min, Max time.Duration
	OK       bool
}

// ElapsedBetween is the Elapsed of a reset sent at resetSent and
// acknowledged at resetAcked, and figures asked at readAsked and
// acknowledged at readAcked; unknown when resetSent is zero.
func ElapsedBetween(resetSent, resetAcked, readAsked, readAcked time.Time) Elapsed {
	if resetSent.IsZero() {
		return Elapsed{}
	}
	return Elapsed{Min: max(0, readAsked.Sub(resetAcked)), Max: readAcked.Sub(resetSent), OK: true}
}

// String is "1.5s–2.5s since the reset" or "unknown".
func (e Elapsed) String() string {
	if !e.OK {
		return "unknown"
	}
	return fmt.Sprintf("%v–%v since the reset", e.Min.Round(time.Millisecond), e.Max.Round(time.Millisecond))
}

// Coverage says exactly what the numbers cover, e.g. "count 1000, window:
// last 1000 acquisitions, one query, over 1.998s–2.004s since the reset".
func (s Stats) Coverage() string {
	c := fmt.Sprintf("count %v, window: %v, %v", s.Count, s.Window, s.Snapshot)
	if s.Elapsed.OK {
		c += ", over " + s.Elapsed.String()
	}
	return c
}

// Missing lists the names of statistics that are not present, in the
// order mean, min, max, stddev, count.
func (s Stats) Missing() []string {
	var m []string
	for _, f := range []struct {
		name string
		ok   bool
	}{{"mean", s.Mean.OK}, {"min", s.Min.OK}, {"max", s.Max.OK}, {"stddev", s.StdDev.OK}, {"count", s.Count.OK}} {
		if !f.ok {
			m = append(m, f.name)
		}
	}
	return m
}

// String renders the statistics on one line.
func (s Stats) String() string {
	return fmt.Sprintf("mean=%v min=%v max=%v stddev=%v count=%v window=%q", s.Mean, s.Min, s.Max, s.StdDev, s.Count, s.Window)
}

// CheckResult returns an error wrapping [ErrNoResult] when s holds no
// result: the mean is missing (the instrument answered its no-result
// value) or the count is present and 0. what names the source for the
// message (e.g. the query whose reply was the no-result value).
func (s Stats) CheckResult(what string) error {
	switch {
	case s.Count.OK && s.Count.N == 0:
		return fmt.Errorf("%w: %s: count 0 (no delay measured since the reset)", ErrNoResult, what)
	case !s.Mean.OK:
		return fmt.Errorf("%w: %s: no mean (the instrument's no-result value)", ErrNoResult, what)
	}
	return nil
}

// roundSlack is the relative slack of the order rules: instruments print
// 4–6 significant digits, so a mean equal to the min can print a unit of
// its last digit below it.
const roundSlack = 5e-4

// CheckPlausible returns an [*ImplausibleError] (no Reply; the driver
// adds it) when the present figures of s cannot be a delay measurement:
// every value within ±span seconds (what the timebase shows; span ≤ 0
// skips this rule), stddev ≥ 0, min ≤ mean ≤ max, count ≥ 1, count 1 ⇒
// min = max, and not mean, min and max all exactly 0 (a channel timed
// against itself). Order comparisons allow for the instruments' printed
// digits. Call it after [Stats.CheckResult].
func (s Stats) CheckPlausible(span float64) error {
	fields := []struct {
		name string
		v    Value
	}{{"mean", s.Mean}, {"min", s.Min}, {"max", s.Max}, {"stddev", s.StdDev}}
	bad := func(field, rule string) error { return &ImplausibleError{Rule: rule, Field: field} }
	if span > 0 {
		for _, f := range fields {
			if f.v.OK && math.Abs(f.v.V) > span {
				return bad(f.name, fmt.Sprintf("|value| ≤ %s, the span the timebase shows (%s is beyond it: a reply in the wrong unit?)",
					FormatSeconds(span), FormatSeconds(f.v.V)))
			}
		}
	}
	if s.StdDev.OK && s.StdDev.V < 0 {
		return bad("stddev", fmt.Sprintf("stddev ≥ 0 (got %s)", FormatSeconds(s.StdDev.V)))
	}
	mag := 0.0
	for _, f := range fields[:3] {
		if f.v.OK {
			mag = max(mag, math.Abs(f.v.V))
		}
	}
	tol := roundSlack * mag
	if s.Min.OK && s.Max.OK && s.Min.V > s.Max.V+tol {
		return bad("min", fmt.Sprintf("min ≤ max (min %s, max %s)", FormatSeconds(s.Min.V), FormatSeconds(s.Max.V)))
	}
	if s.Mean.OK && s.Min.OK && s.Mean.V < s.Min.V-tol {
		return bad("mean", fmt.Sprintf("min ≤ mean (mean %s, min %s)", FormatSeconds(s.Mean.V), FormatSeconds(s.Min.V)))
	}
	if s.Mean.OK && s.Max.OK && s.Mean.V > s.Max.V+tol {
		return bad("mean", fmt.Sprintf("mean ≤ max (mean %s, max %s)", FormatSeconds(s.Mean.V), FormatSeconds(s.Max.V)))
	}
	if s.Count.OK && s.Count.N < 1 {
		return bad("count", fmt.Sprintf("count ≥ 1 (got %d)", s.Count.N))
	}
	if s.Count.OK && s.Count.N == 1 && s.Min.OK && s.Max.OK && math.Abs(s.Max.V-s.Min.V) > tol {
		return bad("count", fmt.Sprintf("count 1 ⇒ min = max (min %s, max %s)", FormatSeconds(s.Min.V), FormatSeconds(s.Max.V)))
	}
	if s.Mean.OK && s.Min.OK && s.Max.OK && s.Mean.V == 0 && s.Min.V == 0 && s.Max.V == 0 {
		return bad("mean", "not all of mean, min and max exactly 0 (what a channel timed against itself gives)")
	}
	return nil
}

// Identity is a parsed *IDN? reply.
type Identity struct {
	Vendor, Model, Serial, Firmware string
	// Raw is the reply as received (trimmed).
	Raw string
}

// String returns the raw identity.
func (id Identity) String() string { return id.Raw }

// ParseIDN splits an IEEE 488.2 *IDN? reply ("vendor,model,serial,fw").
// Missing fields are left empty; it never fails.
func ParseIDN(s string) Identity {
	s = strings.TrimSpace(s)
	id := Identity{Raw: s}
	f := strings.SplitN(s, ",", 4)
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if len(f) > 0 {
		id.Vendor = f[0]
	}
	if len(f) > 1 {
		id.Model = f[1]
	}
	if len(f) > 2 {
		id.Serial = f[2]
	}
	if len(f) > 3 {
		id.Firmware = f[3]
	}
	return id
}

// FormatSeconds prints seconds with an SI prefix (ns, µs, ms, s).
func FormatSeconds(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0s"
	case a < 1e-6:
		return fmt.Sprintf("%.3fns", v*1e9)
	case a < 1e-3:
		return fmt.Sprintf("%.3fµs", v*1e6)
	case a < 1:
		return fmt.Sprintf("%.3fms", v*1e3)
	}
	return fmt.Sprintf("%.6gs", v)
}

// CaptureStats is ReadStats for scopes that compute statistics from
// captured edges (sigrok, gpio-capture): [StatsFromDelays] over delays, the
// window the population limit gives (the first limit delays, else all),
// [SnapshotComputed], and an error wrapping [ErrNoResult] naming what when
// there is no delay at all.
func CaptureStats(delays []float64, limit int, what string) (Stats, error) {
	s := StatsFromDelays(delays)
	s.Window, s.Snapshot = Window{Kind: WindowAll}, SnapshotComputed
	if limit > 0 {
		s.Window = Window{Kind: WindowFirst, N: int64(limit)}
	}
	if len(delays) == 0 {
		return s, fmt.Errorf("%w: %s: count 0 (no delay measured since the reset)", ErrNoResult, what)
	}
	return s, nil
}
