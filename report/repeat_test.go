package report_test

import (
	"math"
	"testing"

	"github.com/hilrig/hilrig/report"
)

// TestCompareRepetitions: the call on a ratio across repetitions, on
// constructed runs.
func TestCompareRepetitions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a, b   []float64
		want   report.Call
		ratio  float64
		bounds bool // Lo/Hi set
	}{
		// hilrig's five runs all below the peer's: a clear win.
		{"clear win", []float64{100, 105, 98, 110, 102}, []float64{200, 190, 210, 205, 198}, report.CallFaster, 102.0 / 200, true},
		{"clear loss", []float64{300, 310, 290, 305, 320}, []float64{200, 190, 210, 205, 198}, report.CallSlower, 305.0 / 200, true},
		// Medians differ (p99 308 µs then 2.88 ms in one run: the issue's
		// flip), but the runs overlap: no call.
		{"overlapping runs", []float64{300, 2880, 310, 290, 2500}, []float64{400, 350, 2000, 280, 900}, report.CallIndistinguishable, 310.0 / 400, true},
		// Two repetitions a side (CI's short form): even a tenfold gap is
		// not a call at 95 %.
		{"R=2", []float64{100, 101}, []float64{1000, 1010}, report.CallTooFew, 100.5 / 1005, false},
		// One run a side (today's results): the ratio as before, no call.
		{"R=1", []float64{20_000}, []float64{40_000}, report.CallTooFew, 0.5, false},
		{"R=3", []float64{1, 2, 3}, []float64{10, 20, 30}, report.CallTooFew, 0.1, false},
		// Four a side is the least that can be called, when fully apart.
		{"R=4 apart", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, report.CallFaster, 2.5 / 25, true},
		// A side with nothing measured: no ratio, no call.
		{"empty side", []float64{0, 0}, []float64{10, 20}, report.CallTooFew, 0, false},
	} {
		got := report.CompareRepetitions(tc.a, tc.b, 0.95)
		if got.Call != tc.want {
			t.Errorf("%s: call %q, want %q (%+v)", tc.name, got.Call, tc.want, got)
		}
		if d := got.Ratio - tc.ratio; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: ratio %v, want %v", tc.name, got.Ratio, tc.ratio)
		}
		if tc.bounds != (got.Lo > 0 && got.Hi > 0) {
			t.Errorf("%s: interval [%v, %v], want bounds %v", tc.name, got.Lo, got.Hi, tc.bounds)
		}
		if tc.bounds && (got.Lo > got.Ratio*1.5 || got.Hi < got.Ratio/1.5 || got.Lo > got.Hi) {
			t.Errorf("%s: interval [%v, %v] far from ratio %v", tc.name, got.Lo, got.Hi, got.Ratio)
		}
		if got.Call.Significant() != (tc.want == report.CallFaster || tc.want == report.CallSlower) {
			t.Errorf("%s: Significant() = %v", tc.name, got.Call.Significant())
		}
	}
	// 5 against 5 at 95 %: the interval is the 3rd smallest to the 3rd
	// largest of the 25 pairwise ratios (exact U distribution:
	// P(U ≤ 2) = 4/252 ≤ 2.5 % < P(U ≤ 3) = 7/252).
	got := report.CompareRepetitions([]float64{1, 2, 3, 4, 5}, []float64{1, 1, 1, 1, 1}, 0.95)
	if got.Lo != 1 || got.Hi != 5 || got.Call != report.CallIndistinguishable {
		t.Errorf("5 vs 5 interval [%v, %v] %q, want [1, 5] indistinguishable", got.Lo, got.Hi, got.Call)
	}
}

// TestRepStatOf: median, spread and the minimum-sample mark.
func TestRepStatOf(t *testing.T) {
	rs := report.RepStatOf(report.StatP99, []float64{308_000, 2_880_000, 0, 400_000}, []int64{1000, 1200, 0, 5000})
	if rs.Median != 400_000 || rs.Min != 308_000 || rs.Max != 2_880_000 || rs.Reps != 3 || rs.Samples != 1000 || rs.Indicative {
		t.Errorf("p99 over 3 reps: %+v", rs)
	}
	// 120 samples at 50 Hz: p99 is the second-worst message, marked.
	rs = report.RepStatOf(report.StatP99, []float64{987_000, 1_280_000}, []int64{120, 120})
	if !rs.Indicative || rs.Samples != 120 || rs.Median != (987_000+1_280_000)/2.0 {
		t.Errorf("p99 from 120 samples: %+v, want indicative", rs)
	}
	if report.RepStatOf(report.StatP50, []float64{5}, []int64{120}).Indicative || report.RepStatOf(report.StatMax, []float64{5}, []int64{3}).Indicative {
		t.Error("p50 of 120 samples or a max marked indicative")
	}
	if m := report.StatP999.MinSamples(); m != 10_000 {
		t.Errorf("p99.9 needs %d samples, want 10000", m)
	}
	if (report.RepStatOf(report.StatP50, nil, nil) != report.RepStat{}) {
		t.Error("no repetitions: not zero")
	}
}

// TestRankNullCDF: the exact Mann-Whitney null distribution, equal and
// unequal sizes (C(5+5,5) = 252 and C(2+3,2) = 10 arrangements).
func TestRankNullCDF(t *testing.T) {
	c := report.RankNullCDF(5, 5)
	if len(c) != 26 || math.Abs(c[2]-4.0/252) > 1e-15 || math.Abs(c[3]-7.0/252) > 1e-15 || c[25] != 1 {
		t.Errorf("5,5: len %d, P(U≤2) %v, P(U≤3) %v, last %v", len(c), c[2], c[3], c[25])
	}
	c = report.RankNullCDF(2, 3)
	if len(c) != 7 || math.Abs(c[0]-0.1) > 1e-15 || math.Abs(c[1]-0.2) > 1e-15 || c[6] != 1 {
		t.Errorf("2,3: %v", c)
	}
}
