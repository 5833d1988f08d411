package soakrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/soak"
)

// Cases turns a judged soak into report cases for the run's result: one
// per stream (totals over the PTP-locked windows, judged against zero loss
// and the window max bound) and one "verdicts" case that carries every
// soak check as a note and fails when the soak verdict failed, so the run
// report shows the soak's outcome even though the result model has no
// soak section of its own.
func Cases(suite, name string, lg *soak.Log, v soak.Verdicts, b soak.Bounds) []report.Case {
	sent, delivered, lost, excluded := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	var method *report.Method
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				k := soak.StreamKey(a.Agent, s.Stream)
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
		c := report.Case{Suite: suite, Name: name + " " + k, Sent: sent[k], Delivered: delivered[k], Lost: lost[k],
			Excluded: excluded[k], Histogram: lg.Totals[k]}
		if c.Histogram == nil {
			c.Histogram = report.NewHistogram()
		}
		if method != nil {
			c.Method = *method
		}
		maxLost := int64(0)
		if b.MaxLost != nil {
			maxLost = *b.MaxLost
		}
		c.Bounds = &report.Bounds{MaxLost: &maxLost, Max: b.MaxLatency}
		if span := spanOf(lg); span > 0 {
			c.Duration = span
			c.MsgsPerSec = float64(c.Delivered) / span.Seconds()
		}
		c.Notes = append(c.Notes, fmt.Sprintf("soak checkpoint %s, %d windows", lg.Path, len(lg.Windows)))
		// Messages published while a churned subscriber was being
		// restarted reach no subscriber: neither delivered nor lost by
		// sequence number. Say how many, so sent − delivered adds up.
		if un := c.Sent - c.Delivered - c.Lost; un != 0 {
			c.Extra = map[string]float64{"sent but not observed (restart gaps, in flight at window edges)": float64(un)}
		}
		out = append(out, c)
	}
	vc := report.Case{Suite: suite, Name: name + " verdicts", Delivered: sumMap(delivered), Sent: sumMap(sent), Lost: sumMap(lost),
		Extra: map[string]float64{"windows": float64(v.Windows), "unlocked_windows": float64(v.UnlockedWindows)}}
	for _, ck := range v.Checks {
		vc.Notes = append(vc.Notes, ck.String())
	}
	for _, tr := range v.Trends {
		vc.Extra["trend "+tr.Subject+" ("+tr.Unit+")"] = tr.Slope
		if tr.Note != "" {
			vc.Notes = append(vc.Notes, "trend "+tr.Subject+": "+tr.Note)
		}
	}
	if v.Verdict == report.Fail {
		vc.Failure = "soak verdict failed: " + strings.Join(FailedChecks(v), "; ")
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

// WriteHTML renders the soak section (time series, verdicts, events,
// gaps) of lg as a self-contained HTML file next to the checkpoint and
// returns its path. The harness's run report does not render soak input
// yet; this file is linked from a run note.
func WriteHTML(lg *soak.Log, v *soak.Verdicts, title string) (string, error) {
	path := strings.TrimSuffix(lg.Path, filepath.Ext(lg.Path)) + ".html"
	f, err := os.CreateTemp(filepath.Dir(path), ".soak-*.html")
	if err != nil {
		return "", fmt.Errorf("soakrun: soak HTML: %w", err)
	}
	defer os.Remove(f.Name())
	if err := reporthtml.Render(f, reporthtml.Input{Title: title, Soak: lg, SoakVerdicts: v}); err != nil {
		f.Close()
		return "", fmt.Errorf("soakrun: render %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil { // a report is for sharing
		f.Close()
		return "", fmt.Errorf("soakrun: soak HTML: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("soakrun: soak HTML: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("soakrun: soak HTML: %w", err)
	}
	return path, nil
}
