package soak

import (
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/report"
)

// Bounds are the soak's limits (plain data; the rack fixture decodes them
// from YAML, durations as "10m"). Zero means "not bounded" except where
// noted.
type Bounds struct {
	// WarmUp is excluded from the memory and drift trends (allocators,
	// page cache and pools settle first).
	WarmUp time.Duration `json:"warm_up_ns,omitempty" yaml:"warm_up,omitempty"`
	// MaxLost bounds lost messages over the whole soak, per stream; nil means
	// zero loss is required.
	MaxLost *int64 `json:"max_lost,omitempty" yaml:"max_lost,omitempty"`
	// MaxRSSSlopeKiBPerHour bounds each agent's RSS growth (Theil–Sen).
	MaxRSSSlopeKiBPerHour float64 `json:"max_rss_slope_kib_per_hour,omitempty" yaml:"max_rss_slope_kib_per_hour,omitempty"`
	// MaxP99DriftPctPerDay and MaxP50DriftPctPerDay bound the per-window
	// latency trend (Theil–Sen slope relative to the median level).
	MaxP99DriftPctPerDay float64 `json:"max_p99_drift_pct_per_day,omitempty" yaml:"max_p99_drift_pct_per_day,omitempty"`
	MaxP50DriftPctPerDay float64 `json:"max_p50_drift_pct_per_day,omitempty" yaml:"max_p50_drift_pct_per_day,omitempty"`
	// MaxLatency: no locked window's max may exceed it.
	MaxLatency time.Duration `json:"max_latency_ns,omitempty" yaml:"max_latency,omitempty"`
	// MaxUnlockedWindows bounds windows with PTP not locked (excluded from
	// latency verdicts); nil means unbounded (only counted).
	MaxUnlockedWindows *int `json:"max_unlocked_windows,omitempty" yaml:"max_unlocked_windows,omitempty"`
	// MaxRestartRecovery bounds restart → first delivery for every restart.
	MaxRestartRecovery time.Duration `json:"max_restart_recovery_ns,omitempty" yaml:"max_restart_recovery,omitempty"`
	// MaxFaultWindows bounds the fault windows (board outages recovered by
	// a power cycle); nil means unbounded (only counted).
	MaxFaultWindows *int `json:"max_fault_windows,omitempty" yaml:"max_fault_windows,omitempty"`
}

// Trend is one fitted trend, for the report.
type Trend struct {
	Subject string  `json:"subject"` // "board1 RSS", "board1/imu p99"
	Slope   float64 `json:"slope"`   // in Unit
	Unit    string  `json:"unit"`    // "KiB/h", "%/day"
	Points  int     `json:"points"`
	Note    string  `json:"note,omitempty"`
}

// Verdicts is the outcome of Judge.
type Verdicts struct {
	Checks          []report.Check `json:"checks"`
	Trends          []Trend        `json:"trends"`
	UnlockedWindows int            `json:"unlocked_windows"`
	// FaultWindows counts windows holding a board outage ([Window.Fault]);
	// Faults lists them, in order.
	FaultWindows int            `json:"fault_windows,omitempty"`
	Faults       []Fault        `json:"faults,omitempty"`
	Windows      int            `json:"windows"`
	Verdict      report.Verdict `json:"verdict"`
}

// Judge computes the soak verdicts over lg. Windows with PTP not locked are
// excluded from the latency checks (drift, max) and counted. Trends with fewer
// than 3 points after warm-up are reported with verdict NoBounds ("too few
// windows"), never as a pass of something unmeasured. It does not block.
func Judge(lg *Log, b Bounds) Verdicts {
	v := Verdicts{Windows: len(lg.Windows)}
	t0 := lg.Header.Started
	if len(lg.Windows) > 0 && (t0.IsZero() || lg.Windows[0].Start.Before(t0)) {
		t0 = lg.Windows[0].Start
	}
	warm := t0.Add(b.WarmUp)

	type series struct{ x, p50, p99 []float64 }
	streams := map[string]*series{}
	lost := map[string]int64{}
	sent := map[string]int64{}
	rss := map[string]*series{} // p50 slot holds RSS bytes
	var agentKeys []string
	var maxCk *report.Check
	if b.MaxLatency > 0 {
		maxCk = &report.Check{Bound: "window max", Unit: "ns", Limit: float64(b.MaxLatency), Verdict: report.Pass}
	}
	var restartChecks []report.Check
	for i := range lg.Windows {
		w := &lg.Windows[i]
		locked := w.Locked()
		if !locked {
			v.UnlockedWindows++
		}
		// A fault window's samples and losses belong to the outage, not
		// to the system under test: excluded like an unlocked window's
		// latency, and counted.
		fault := w.Fault != nil
		if fault {
			v.FaultWindows++
			v.Faults = append(v.Faults, *w.Fault)
		}
		hours := w.End.Sub(t0).Hours()
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				k := StreamKey(a.Agent, s.Stream)
				if fault {
					continue
				}
				lost[k] += s.Lost
				sent[k] += s.Sent
				if !locked || s.Summary.Count == 0 {
					continue
				}
				if maxCk != nil && float64(s.Summary.Max) > maxCk.Measured {
					maxCk.Measured = float64(s.Summary.Max)
					if s.Summary.Max > int64(b.MaxLatency) {
						maxCk.Verdict = report.Fail
						maxCk.Note = fmt.Sprintf("worst: window %d, %s", w.Index, k)
					}
				}
				if w.Start.Before(warm) {
					continue
				}
				st := streams[k]
				if st == nil {
					st = &series{}
					streams[k] = st
				}
				st.x = append(st.x, hours)
				st.p50 = append(st.p50, float64(s.Summary.P50))
				st.p99 = append(st.p99, float64(s.Summary.P99))
			}
			if !w.Start.Before(warm) && a.RSSBytes > 0 && !fault {
				r := rss[a.Agent]
				if r == nil {
					r = &series{}
					rss[a.Agent] = r
					agentKeys = append(agentKeys, a.Agent)
				}
				r.x = append(r.x, hours)
				r.p50 = append(r.p50, float64(a.RSSBytes))
			}
			for _, e := range a.Events {
				if e.Kind != EventRestart || b.MaxRestartRecovery <= 0 {
					continue
				}
				ck := report.Check{Bound: "restart recovery " + a.Agent + " " + e.Target, Unit: "ns",
					Limit: float64(b.MaxRestartRecovery), Measured: float64(e.RecoveryNs), Verdict: report.Pass}
				if !e.Recovered {
					ck.Verdict, ck.Note = report.Fail, "never recovered"
				} else if e.RecoveryNs > int64(b.MaxRestartRecovery) {
					ck.Verdict = report.Fail
				}
				restartChecks = append(restartChecks, ck)
			}
		}
	}

	// Loss, per stream, in first-seen order.
	maxLost := int64(0)
	if b.MaxLost != nil {
		maxLost = *b.MaxLost
	}
	for _, k := range lg.StreamKeys {
		ck := report.Check{Bound: "lost " + k, Unit: "messages", Limit: float64(maxLost), Measured: float64(lost[k]), Verdict: report.Pass}
		if lost[k] > maxLost {
			ck.Verdict = report.Fail
		}
		if sent[k] == 0 {
			ck.Verdict, ck.Note = report.Fail, "nothing sent"
		}
		v.Checks = append(v.Checks, ck)
	}
	// Memory.
	for _, a := range agentKeys {
		r := rss[a]
		slope, _, err := TheilSen(r.x, r.p50)
		tr := Trend{Subject: a + " RSS", Unit: "KiB/h", Points: len(r.x), Slope: slope / 1024}
		v.Trends = append(v.Trends, trendCheck(&v, tr, err, b.MaxRSSSlopeKiBPerHour))
	}
	// Latency drift.
	for _, k := range lg.StreamKeys {
		st := streams[k]
		if st == nil {
			st = &series{}
		}
		for _, q := range []struct {
			name  string
			y     []float64
			bound float64
		}{{"p50", st.p50, b.MaxP50DriftPctPerDay}, {"p99", st.p99, b.MaxP99DriftPctPerDay}} {
			slope, _, err := TheilSen(st.x, q.y)
			tr := Trend{Subject: k + " " + q.name, Unit: "%/day", Points: len(q.y)}
			if err == nil {
				level := median(append([]float64(nil), q.y...))
				if level > 0 {
					tr.Slope = slope * 24 / level * 100
				}
			}
			v.Trends = append(v.Trends, trendCheck(&v, tr, err, q.bound))
		}
	}
	if maxCk != nil {
		v.Checks = append(v.Checks, *maxCk)
	}
	if b.MaxUnlockedWindows != nil {
		ck := report.Check{Bound: "PTP-unlocked windows", Unit: "windows", Limit: float64(*b.MaxUnlockedWindows),
			Measured: float64(v.UnlockedWindows), Verdict: report.Pass}
		if v.UnlockedWindows > *b.MaxUnlockedWindows {
			ck.Verdict = report.Fail
		}
		v.Checks = append(v.Checks, ck)
	}
	if b.MaxFaultWindows != nil {
		ck := report.Check{Bound: "fault windows (recovered board outages)", Unit: "windows", Limit: float64(*b.MaxFaultWindows),
			Measured: float64(v.FaultWindows), Verdict: report.Pass}
		if v.FaultWindows > *b.MaxFaultWindows {
			ck.Verdict = report.Fail
		}
		for _, f := range v.Faults {
			ck.Note += fmt.Sprintf("%s: %s (%s, %v); ", f.Board, f.Cause, f.Recovery, f.To.Sub(f.From).Round(time.Millisecond))
		}
		v.Checks = append(v.Checks, ck)
	}
	v.Checks = append(v.Checks, restartChecks...)

	v.Verdict = report.NoBounds
	for _, ck := range v.Checks {
		switch ck.Verdict {
		case report.Fail:
			v.Verdict = report.Fail
		case report.Pass:
			if v.Verdict != report.Fail {
				v.Verdict = report.Pass
			}
		}
	}
	if len(lg.Windows) == 0 {
		v.Verdict = report.Fail
		v.Checks = append(v.Checks, report.Check{Bound: "windows", Unit: "windows", Limit: 1, Lower: true, Verdict: report.Fail, Note: "no window closed"})
	}
	return v
}

// trendCheck adds the check for a trend with an upper bound on |slope| (when
// bound > 0) and returns the trend with its note.
func trendCheck(v *Verdicts, tr Trend, err error, bound float64) Trend {
	if err != nil {
		if errors.Is(err, ErrTooFewPoints) {
			tr.Note = "too few windows after warm-up for a trend"
		} else {
			tr.Note = err.Error()
		}
	}
	if bound <= 0 {
		return tr
	}
	ck := report.Check{Bound: "trend " + tr.Subject, Unit: tr.Unit, Limit: bound, Measured: tr.Slope, Verdict: report.Pass}
	switch {
	case err != nil:
		ck.Verdict, ck.Note = report.NoBounds, tr.Note
	case tr.Slope > bound:
		// Only growth fails: memory shrinking or latency improving is fine.
		ck.Verdict = report.Fail
	}
	v.Checks = append(v.Checks, ck)
	return tr
}
