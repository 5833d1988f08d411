// Package trend turns stored runs into per-case series (p50, p99, max,
// loss across runs) and flags change points: the run where a metric
// shifted and stayed shifted.
//
// # Method: windowed Mann–Whitney rank test
//
// For every run i of a series with at least W runs before and W from i on,
// the W values before i are compared with the W values from i on by the
// two-sided Mann–Whitney U test, with the exact null distribution for
// sizes (W, W) (ties count ½, which makes the test conservative). i is a
// candidate when p ≤ Alpha and the medians of the two windows differ by
// at least MinShift relative to the median before (for loss, which is
// usually 0 before, any increase of the loss rate from 0 counts). Among
// candidates closer than W runs to each other, the one with the smallest
// p (then the largest difference of the windows' means) is kept: that run introduced the change. A
// change with a higher median after is a regression (every metric here is
// lower-is-better).
//
// Defaults W=8, Alpha=0.001, MinShift=5%: with W=8 the smallest two-sided
// p is 2/12870≈0.00016 and p ≤ 0.001 allows about two of the 64 pairs out
// of order, so one noisy run never flags, and the false-alarm rate per
// run and metric is about 0.1% (86 cases × 4 metrics over 100 runs of
// pure noise flag a handful of points at most; at W=5 the floor would be
// p=0.008, one false flag per ~125 runs and metric). A change is seen W
// runs after it happened. A rank test needs no
// distribution assumption (latency is not normal) and is unmoved by one
// outlier, unlike a mean shift. Cost: O(n·W²) per series.
package trend

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/store"
)

// Params are the change-point detector's parameters.
type Params struct {
	// Window is W, the number of runs on each side of a candidate (2..50).
	Window int
	// Alpha is the two-sided significance level (0 < Alpha < 1).
	Alpha float64
	// MinShift is the smallest relative change of the median that counts
	// (0.05 = 5%).
	MinShift float64
}

// DefaultParams are the documented defaults.
var DefaultParams = Params{Window: 8, Alpha: 0.001, MinShift: 0.05}

// Validate checks the parameters' ranges.
func (p Params) Validate() error {
	if p.Window < 2 || p.Window > 50 {
		return fmt.Errorf("trend: window %d out of range 2..50", p.Window)
	}
	if !(p.Alpha > 0 && p.Alpha < 1) {
		return fmt.Errorf("trend: alpha %g out of range (0, 1)", p.Alpha)
	}
	if !(p.MinShift >= 0 && p.MinShift < 100) {
		return fmt.Errorf("trend: min shift %g out of range [0, 100)", p.MinShift)
	}
	return nil
}

func (p Params) String() string {
	return fmt.Sprintf("windowed Mann–Whitney U, W=%d, alpha=%g, min shift %g%%", p.Window, p.Alpha, p.MinShift*100)
}

// Metrics a series carries, in display order.
var Metrics = []string{"p50", "p99", "max", "loss"}

// Value returns metric m of p: latencies in ns, loss as a fraction of
// sent (0 when nothing was sent).
func Value(p store.Point, m string) float64 {
	switch m {
	case "p50":
		return float64(p.P50)
	case "p99":
		return float64(p.P99)
	case "max":
		return float64(p.Max)
	case "loss":
		if p.Sent <= 0 {
			return 0
		}
		return float64(p.Lost) / float64(p.Sent)
	}
	return math.NaN()
}

// Change is one flagged change point.
type Change struct {
	Metric string
	// Index is the first point after the change (the run that introduced
	// it) in Series.Points.
	Index    int
	Run      store.RunKey
	Revision string
	Start    time.Time
	// Before and After are the medians of the W values on either side.
	Before, After float64
	P             float64
	Regression    bool
	// gap is |mean after − mean before|, which places a change within a
	// run of equally significant candidates (the exact split maximises it).
	gap float64
}

// Shift is the relative change of the median (After/Before − 1); +Inf
// when Before is 0 and After is not.
func (c Change) Shift() float64 {
	if c.Before == 0 {
		if c.After == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return c.After/c.Before - 1
}

// Series is one case across runs, oldest first.
type Series struct {
	Key       string // suite/name
	Transport string
	Points    []store.Point
	Changes   []Change
}

// Regressions returns the changes that are regressions.
func (s *Series) Regressions() []Change {
	var out []Change
	for _, c := range s.Changes {
		if c.Regression {
			out = append(out, c)
		}
	}
	return out
}

// Build groups points (ordered by key then start, as store.Points returns
// them) into series and detects change points in each.
func Build(points []store.Point, p Params) ([]Series, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	null := nullCDF(p.Window)
	var out []Series
	for i := 0; i < len(points); {
		j := i
		for j < len(points) && points[j].Key() == points[i].Key() {
			j++
		}
		s := Series{Key: points[i].Key(), Transport: points[i].Transport, Points: points[i:j:j]}
		for _, m := range Metrics {
			xs := make([]float64, len(s.Points))
			for k := range s.Points {
				xs[k] = Value(s.Points[k], m)
			}
			for _, c := range Detect(xs, p, null) {
				c.Metric = m
				pt := s.Points[c.Index]
				c.Run, c.Revision, c.Start = pt.Run, pt.Revision, pt.Start
				s.Changes = append(s.Changes, c)
			}
		}
		slices.SortStableFunc(s.Changes, func(a, b Change) int { return a.Index - b.Index })
		out = append(out, s)
		i = j
	}
	return out, nil
}

// Detect returns the change points of xs (Index, Before, After, P,
// Regression set). null is nullCDF(p.Window).
func Detect(xs []float64, p Params, null []float64) []Change {
	w := p.Window
	var cands []Change
	before, after := make([]float64, w), make([]float64, w)
	for i := w; i+w <= len(xs); i++ {
		copy(before, xs[i-w:i])
		copy(after, xs[i:i+w])
		u2 := 0 // 2U: pairs with after > before count 2, ties 1
		for _, a := range after {
			for _, b := range before {
				switch {
				case a > b:
					u2 += 2
				case a == b:
					u2++
				}
			}
		}
		// Two-sided p from the smaller tail; ties make 2U odd, rounding
		// the tail count down towards the centre is conservative.
		lo := min(u2, 2*w*w-u2) / 2
		pv := min(1, 2*null[lo])
		if pv > p.Alpha {
			continue
		}
		mb, ma := median(before), median(after)
		c := Change{Index: i, Before: mb, After: ma, P: pv, Regression: ma > mb, gap: math.Abs(mean(after) - mean(before))}
		if sh := math.Abs(c.Shift()); sh < p.MinShift || ma == mb {
			continue
		}
		cands = append(cands, c)
	}
	// Keep the best candidate of each cluster (candidates < W apart).
	var out []Change
	for _, c := range cands {
		if n := len(out); n > 0 && c.Index-out[n-1].Index < w {
			if better(c, out[n-1]) {
				out[n-1] = c
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

func better(a, b Change) bool {
	if a.P != b.P {
		return a.P < b.P
	}
	return a.gap > b.gap
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// median is report.Median (one implementation for the trend and the
// middleware comparison).
func median(xs []float64) float64 { return report.Median(xs) }

// nullCDF returns P(U ≤ u) for u = 0..w², U the Mann–Whitney statistic of
// two samples of size w under the null hypothesis (no ties): the exact
// distribution report.RankNullCDF counts, shared with the middleware
// comparison's rank test.
func nullCDF(w int) []float64 { return report.RankNullCDF(w, w) }
