package soakrun

import (
	"fmt"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// Cases turns a judged soak into report cases for the run's result: one
// per stream (totals over the PTP-locked windows, judged against zero loss
// and the window max bound) and one "verdicts" case that carries every
// soak check (loss, memory and latency trends, window max, PTP, restart
// recovery) as a real report check, so its verdict is the soak verdict
// (report.Case.Finalize keeps caller checks). The soak's time series
// reach the run report through harness.SoakCheckpoint.
func Cases(suite, name string, lg *soak.Log, v soak.Verdicts, b soak.Bounds) []report.Case {
	sent, delivered, lost, excluded := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	faultLost := map[string]int64{}
	var method *report.Method
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				k := soak.StreamKey(a.Agent, s.Stream)
				if w.Fault != nil {
					// A board outage: its messages are not the system's
					// (as in soak.Judge), excluded and counted apart.
					excluded[k] += s.Delivered + s.Excluded
					faultLost[k] += s.Lost
					continue
				}
				sent[k] += s.Sent
				delivered[k] += s.Delivered
				lost[k] += s.Lost
				excluded[k] += s.Excluded
				if s.Method != nil {
					method = s.Method
				}
			}
		}
	}
	var out []report.Case
	for _, k := range lg.StreamKeys {
		h := lg.Totals[k]
		if h == nil {
			h = report.NewHistogram()
		}
		var m report.Method
		if method != nil {
			m = *method
		}
		maxLost := int64(0)
		if b.MaxLost != nil {
			maxLost = *b.MaxLost
		}
		c := *report.NewCase(nil, report.CaseSpec{Suite: suite, Name: name + " " + k, Method: m,
			Bounds: &report.Bounds{MaxLost: &maxLost, Max: b.MaxLatency}},
			report.Results{Sent: sent[k], Delivered: delivered[k], Lost: lost[k], Excluded: excluded[k], Histogram: h})
		if span := spanOf(lg); span > 0 {
			c.Duration = span
			c.MsgsPerSec = float64(c.Delivered) / span.Seconds()
		}
		add := report.Noted("soakrun.Cases", fmt.Sprintf("soak checkpoint %s, %d windows", lg.Path, len(lg.Windows)))
		// Messages published while a churned subscriber was being
		// restarted reach no subscriber: neither delivered nor lost by
		// sequence number. Say how many, so sent − delivered adds up.
		if un := c.Sent - c.Delivered - c.Lost; un != 0 {
			add.Extra = map[report.ExtraKey]float64{report.ExtraUnobserved: float64(un)}
		}
		if v.FaultWindows > 0 {
			if add.Extra == nil {
				add.Extra = map[report.ExtraKey]float64{}
			}
			add.Extra[report.ExtraFaultWindowLost] = float64(faultLost[k])
			add.Notes = append(add.Notes, fmt.Sprintf("%d fault windows (board outages, program crashes) excluded: see the verdicts case", v.FaultWindows))
		}
		c.Add(add)
		out = append(out, c)
	}
	vc := *report.NewCase(nil, report.CaseSpec{Suite: suite, Name: name + " verdicts"},
		report.Results{Delivered: sumMap(delivered), Sent: sumMap(sent), Lost: sumMap(lost)})
	add := report.Addition{By: "soakrun.Cases", Checks: v.Checks,
		Extra: map[report.ExtraKey]float64{report.ExtraWindows: float64(v.Windows), report.ExtraUnlockedWindows: float64(v.UnlockedWindows)}}
	if v.FaultWindows > 0 {
		add.Extra[report.ExtraFaultWindows] = float64(v.FaultWindows)
	}
	for _, f := range v.Faults {
		n := fmt.Sprintf("fault window %s → %s: %s; %s", f.From.UTC().Format(time.RFC3339), f.To.UTC().Format(time.RFC3339), f.Cause, f.Recovery)
		if f.Console != "" {
			n += "\nconsole:\n" + f.Console
		}
		add.Notes = append(add.Notes, n)
	}
	for _, tr := range v.Trends {
		add.Extra[report.TrendKey(tr.Subject, tr.Unit)] = tr.Slope
		if tr.Note != "" {
			add.Notes = append(add.Notes, "trend "+tr.Subject+": "+tr.Note)
		}
	}
	vc.Add(add)
	if v.Verdict == report.Fail && len(FailedChecks(v)) == 0 {
		vc.Failure = "soak verdict failed" // no failed check to say why: keep the verdict
	}
	out = append(out, vc)
	return out
}

// FailedChecks lists the failed checks of v, one line each.
func FailedChecks(v soak.Verdicts) []string {
	var out []string
	for _, ck := range v.Checks {
		if ck.Verdict == report.Fail {
			out = append(out, ck.String())
		}
	}
	return out
}

func sumMap(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func spanOf(lg *soak.Log) time.Duration {
	if len(lg.Windows) == 0 {
		return 0
	}
	return lg.Windows[len(lg.Windows)-1].End.Sub(lg.Windows[0].Start)
}
