package report

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	// Threshold is the relative change counted as a regression, e.g. 0.10:
	// latency (p50, p99, max) up by more than 10 %, throughput down by more.
	Threshold float64
	// MinDeltaNs ignores latency changes smaller than this in absolute terms
	// (HDR resolution and timer noise at microsecond scale); 0 disables.
	MinDeltaNs int64
}

// Delta is one statistic of one case in both runs.
type Delta struct {
	Stat      string  `json:"stat"` // "p50", "p99", "max", "MB/s", "msg/s", "lost"
	Base      float64 `json:"base"`
	New       float64 `json:"new"`
	Rel       float64 `json:"rel"` // (new − base) / base; ±Inf when base is 0
	Regressed bool    `json:"regressed"`
}

// CaseDelta compares one case.
type CaseDelta struct {
	Key     string  `json:"key"`
	Status  string  `json:"status"` // "regressed", "improved", "same", "new", "missing"
	Deltas  []Delta `json:"deltas"`
	BaseDoc string  `json:"base_method,omitempty"`
	NewDoc  string  `json:"new_method,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Threshold float64     `json:"threshold"`
	Cases     []CaseDelta `json:"cases"`
	Regressed int         `json:"regressed"`
}

// Compare sets every case of cur against the same case (Suite/Name) of
// base. Latency regresses when it grows by more than the threshold (and
// MinDeltaNs), throughput when it shrinks by more, loss when it grows at
// all. A case missing from cur is reported as "missing" (and counts as a
// regression: a baseline case that vanished is not a pass); a new case is
// reported, not judged. A method change (e.g. one-way → RTT/2) is noted
// because the numbers are then not comparable.
func Compare(base, cur *Result, o CompareOptions) Comparison {
	cmp := Comparison{Threshold: o.Threshold}
	idx := map[string]*Case{}
	for i := range base.Cases {
		idx[base.Cases[i].Key()] = &base.Cases[i]
	}
	seen := map[string]bool{}
	for i := range cur.Cases {
		n := &cur.Cases[i]
		k := n.Key()
		seen[k] = true
		b, ok := idx[k]
		if !ok {
			cmp.Cases = append(cmp.Cases, CaseDelta{Key: k, Status: "new"})
			continue
		}
		cd := CaseDelta{Key: k, Status: "same"}
		if b.Method.Kind != n.Method.Kind || b.Method.Clocks != n.Method.Clocks {
			cd.Note = fmt.Sprintf("method changed: %s → %s", b.Method, n.Method)
		}
		lat := func(stat string, bv, nv int64) {
			if bv == 0 && nv == 0 {
				return
			}
			d := Delta{Stat: stat, Base: float64(bv), New: float64(nv), Rel: rel(float64(bv), float64(nv))}
			d.Regressed = d.Rel > o.Threshold && nv-bv > o.MinDeltaNs
			cd.add(d, d.Rel < -o.Threshold && bv-nv > o.MinDeltaNs)
		}
		if b.Summary.Count > 0 || n.Summary.Count > 0 {
			lat("p50", b.Summary.P50, n.Summary.P50)
			lat("p99", b.Summary.P99, n.Summary.P99)
			lat("max", b.Summary.Max, n.Summary.Max)
		}
		thr := func(stat string, bv, nv float64) {
			if bv == 0 && nv == 0 {
				return
			}
			d := Delta{Stat: stat, Base: bv, New: nv, Rel: rel(bv, nv)}
			d.Regressed = d.Rel < -o.Threshold
			cd.add(d, d.Rel > o.Threshold)
		}
		thr("MB/s", b.ThroughputMBps, n.ThroughputMBps)
		thr("msg/s", b.MsgsPerSec, n.MsgsPerSec)
		if b.Lost != 0 || n.Lost != 0 {
			d := Delta{Stat: "lost", Base: float64(b.Lost), New: float64(n.Lost), Rel: rel(float64(b.Lost), float64(n.Lost))}
			d.Regressed = n.Lost > b.Lost
			cd.add(d, n.Lost < b.Lost)
		}
		if cd.Status == "regressed" {
			cmp.Regressed++
		}
		cmp.Cases = append(cmp.Cases, cd)
	}
	for i := range base.Cases {
		if k := base.Cases[i].Key(); !seen[k] {
			cmp.Cases = append(cmp.Cases, CaseDelta{Key: k, Status: "missing", Note: "in base, not in new run"})
			cmp.Regressed++
		}
	}
	return cmp
}

func (cd *CaseDelta) add(d Delta, improved bool) {
	cd.Deltas = append(cd.Deltas, d)
	switch {
	case d.Regressed:
		cd.Status = "regressed"
	case improved && cd.Status == "same":
		cd.Status = "improved"
	}
}

func rel(b, n float64) float64 {
	if b == 0 {
		if n == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (n - b) / b
}

// Err returns an error wrapping ErrRegression when any case regressed.
func (c Comparison) Err() error {
	if c.Regressed > 0 {
		return fmt.Errorf("%w: %d case(s) beyond %.1f%%", ErrRegression, c.Regressed, c.Threshold*100)
	}
	return nil
}

// WriteTable prints the comparison as an aligned text table.
func (c Comparison) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSTAT\tBASE\tNEW\tDELTA\tVERDICT")
	for _, cd := range c.Cases {
		if len(cd.Deltas) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", cd.Key, cd.Status)
		}
		for i, d := range cd.Deltas {
			unit := "ns"
			switch d.Stat {
			case "MB/s", "msg/s":
				unit = d.Stat
			case "lost":
				unit = "messages"
			}
			verdict := ""
			if d.Regressed {
				verdict = "REGRESSED"
			}
			if i == len(cd.Deltas)-1 {
				verdict = joinNonEmpty(verdict, cd.Status)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cd.Key, d.Stat, FormatValue(d.Base, unit), FormatValue(d.New, unit), fmtRel(d.Rel), verdict)
		}
		if cd.Note != "" {
			fmt.Fprintf(tw, "%s\tnote\t%s\t\t\t\n", cd.Key, cd.Note)
		}
	}
	fmt.Fprintf(tw, "\n%d regressed beyond %.1f%%\n", c.Regressed, c.Threshold*100)
	return tw.Flush()
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + " (" + b + ")"
}

func fmtRel(r float64) string {
	if math.IsInf(r, 1) {
		return "+∞"
	}
	return fmt.Sprintf("%+.1f%%", r*100)
}
