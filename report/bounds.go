package report

import (
	"fmt"
	"time"
)

// Bounds are the limits a case is judged against. It is plain data: the rack
// fixture decodes it from YAML (durations as "250us", "2ms"), the result file
// stores it as JSON (durations in ns). A zero duration means "no bound"; a nil
// loss pointer means "loss not bounded" (a pointer because 0 is the most
// common and meaningful bound).
type Bounds struct {
	P50    time.Duration `json:"p50_ns,omitempty" yaml:"p50,omitempty"`
	P99    time.Duration `json:"p99_ns,omitempty" yaml:"p99,omitempty"`
	P999   time.Duration `json:"p999_ns,omitempty" yaml:"p999,omitempty"`
	Max    time.Duration `json:"max_ns,omitempty" yaml:"max,omitempty"`
	Jitter time.Duration `json:"jitter_ns,omitempty" yaml:"jitter,omitempty"`
	// MaxLost bounds lost messages (by sequence number) per case.
	MaxLost *int64 `json:"max_lost,omitempty" yaml:"max_lost,omitempty"`
	// MinThroughputMBps and MinMsgsPerSec bound throughput cases from below
	// (MB = 10^6 bytes); 0 means no bound.
	MinThroughputMBps float64 `json:"min_throughput_mbps,omitempty" yaml:"min_throughput_mbps,omitempty"`
	MinMsgsPerSec     float64 `json:"min_msgs_per_sec,omitempty" yaml:"min_msgs_per_sec,omitempty"`
	// MaxCPUPercent bounds the CPU use of the measured endpoints (100 = one core).
	MaxCPUPercent float64 `json:"max_cpu_percent,omitempty" yaml:"max_cpu_percent,omitempty"`
	// ScopeTolerance bounds |scope mean − software mean| in scope cases.
	ScopeTolerance time.Duration `json:"scope_tolerance_ns,omitempty" yaml:"scope_tolerance,omitempty"`
}

// IsZero reports whether no bound is set.
func (b Bounds) IsZero() bool {
	return b.P50 == 0 && b.P99 == 0 && b.P999 == 0 && b.Max == 0 && b.Jitter == 0 && b.MaxLost == nil &&
		b.MinThroughputMBps == 0 && b.MinMsgsPerSec == 0 && b.MaxCPUPercent == 0 && b.ScopeTolerance == 0
}

// Loss returns a pointer to n, for filling Bounds.MaxLost in literals.
func Loss(n int64) *int64 { return &n }

// Verdict is the outcome of a judgement.
type Verdict string

// Verdicts. NoBounds means nothing was asserted (reported, not judged).
const (
	Pass     Verdict = "pass"
	Fail     Verdict = "fail"
	NoBounds Verdict = "no-bounds"
)

// Check is the verdict of one bound: Bound names it ("p99", "max", "lost",
// "throughput", ...), Limit and Measured are in Unit ("ns", "messages",
// "MB/s", "msg/s", "%"). Upper bounds pass when Measured ≤ Limit, lower
// bounds (throughput) when Measured ≥ Limit.
type Check struct {
	Bound    string  `json:"bound"`
	Unit     string  `json:"unit"`
	Limit    float64 `json:"limit"`
	Measured float64 `json:"measured"`
	Lower    bool    `json:"lower,omitempty"`
	Verdict  Verdict `json:"verdict"`
	Note     string  `json:"note,omitempty"`
}

// String renders "p99 812µs ≤ 1ms pass".
func (c Check) String() string {
	op := "≤"
	if c.Lower {
		op = "≥"
	}
	return fmt.Sprintf("%s %s %s %s: %s", c.Bound, FormatValue(c.Measured, c.Unit), op, FormatValue(c.Limit, c.Unit), c.Verdict)
}

// FormatValue renders a value in its unit; ns values as durations.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "ns":
		return FormatNs(int64(v))
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "messages", "windows", "":
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g %s", v, unit)
	}
}

// FormatNs renders nanoseconds with three significant digits in the most
// readable unit: "850ns", "12.3µs", "4.56ms", "1.20s".
func FormatNs(ns int64) string {
	neg := ""
	f := float64(ns)
	if ns < 0 {
		neg, f = "-", -f
	}
	switch {
	case f < 1e3:
		return fmt.Sprintf("%s%.0fns", neg, f)
	case f < 1e6:
		return neg + sig3(f/1e3) + "µs"
	case f < 1e9:
		return neg + sig3(f/1e6) + "ms"
	default:
		return neg + sig3(f/1e9) + "s"
	}
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func upper(name string, limit time.Duration, measured int64) Check {
	c := Check{Bound: name, Unit: "ns", Limit: float64(limit), Measured: float64(measured), Verdict: Pass}
	if measured > int64(limit) {
		c.Verdict = Fail
	}
	return c
}

// Judge applies b to c and returns one Check per bound that is set, in a
// fixed order, plus the overall verdict (Fail if any check fails, NoBounds if
// none is set). Latency bounds on a case with no samples fail ("no samples"):
// an empty case must never pass silently.
func (b Bounds) Judge(c *Case) ([]Check, Verdict) {
	var out []Check
	s := c.Summary
	lat := []struct {
		name string
		lim  time.Duration
		v    int64
	}{{"p50", b.P50, s.P50}, {"p99", b.P99, s.P99}, {"p99.9", b.P999, s.P999}, {"max", b.Max, s.Max}, {"jitter", b.Jitter, s.Jitter}}
	for _, l := range lat {
		if l.lim <= 0 {
			continue
		}
		ck := upper(l.name, l.lim, l.v)
		if s.Count == 0 {
			ck.Verdict, ck.Note = Fail, "no samples"
		}
		out = append(out, ck)
	}
	if b.MaxLost != nil {
		ck := Check{Bound: "lost", Unit: "messages", Limit: float64(*b.MaxLost), Measured: float64(c.Lost), Verdict: Pass}
		if c.Lost > *b.MaxLost {
			ck.Verdict = Fail
		}
		if c.Sent == 0 && c.Delivered == 0 && s.Count == 0 {
			ck.Verdict, ck.Note = Fail, "nothing sent"
		}
		out = append(out, ck)
	}
	lower := func(name, unit string, lim, v float64) {
		if lim <= 0 {
			return
		}
		ck := Check{Bound: name, Unit: unit, Limit: lim, Measured: v, Lower: true, Verdict: Pass}
		if v < lim {
			ck.Verdict = Fail
		}
		out = append(out, ck)
	}
	lower("throughput", "MB/s", b.MinThroughputMBps, c.ThroughputMBps)
	lower("msg rate", "msg/s", b.MinMsgsPerSec, c.MsgsPerSec)
	if b.MaxCPUPercent > 0 {
		ck := Check{Bound: "cpu", Unit: "%", Limit: b.MaxCPUPercent, Measured: c.CPUPercent, Verdict: Pass}
		if c.CPUPercent > b.MaxCPUPercent {
			ck.Verdict = Fail
		}
		out = append(out, ck)
	}
	if b.ScopeTolerance > 0 && c.Scope != nil {
		ck := Check{Bound: "scope Δ", Unit: "ns", Limit: float64(b.ScopeTolerance), Verdict: Pass}
		if c.Scope.DifferenceNs == nil {
			ck.Verdict, ck.Note = Fail, "scope statistic missing"
		} else {
			d := *c.Scope.DifferenceNs
			if d < 0 {
				d = -d
			}
			ck.Measured = d
			if d > float64(b.ScopeTolerance) {
				ck.Verdict = Fail
			}
		}
		out = append(out, ck)
	}
	if len(out) == 0 {
		return nil, NoBounds
	}
	v := Pass
	for _, ck := range out {
		if ck.Verdict == Fail {
			v = Fail
		}
	}
	return out, v
}
