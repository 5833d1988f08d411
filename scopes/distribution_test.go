package scopes_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/scopes"
)

func us(v ...float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * 1e-6
	}
	return out
}

func repeat(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v * 1e-6
	}
	return out
}

// expTail draws n delays of base + Exp(scale) µs from a seeded PCG, so the
// "random" samples are the same on every run.
func expTail(seed uint64, n int, base, scale float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = (base + scale*r.ExpFloat64()) * 1e-6
	}
	return out
}

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 5}, 0.5, 3},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4, 5}, 0, 1},
		{[]float64{1, 2, 3, 4, 5}, 1, 5},
		{[]float64{10, 20}, 0.99, 19.9},
		{[]float64{7}, 0.99, 7},
	} {
		if got := scopes.Quantile(tc.in, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v, %g) = %g, want %g", tc.in, tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(scopes.Quantile(nil, 0.5)) {
		t.Error("Quantile of an empty sample is not NaN")
	}
}

func TestKSDistance(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"identical", []float64{1, 2, 3}, []float64{1, 2, 3}, 0},
		{"identical with ties", []float64{1, 1, 2, 2}, []float64{1, 2}, 0},
		{"disjoint", []float64{1, 2}, []float64{3, 4, 5}, 1},
		{"interleaved", []float64{1, 2, 3}, []float64{1.5, 2.5, 3.5}, 1.0 / 3},
		{"empty", nil, []float64{1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scopes.KSDistance(tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("KSDistance = %g, want %g", got, tc.want)
			}
			if got := scopes.KSDistance(tc.b, tc.a); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("KSDistance reversed = %g, want %g (symmetric)", got, tc.want)
			}
		})
	}
}

func TestKSDistanceNoAllocs(t *testing.T) {
	a, b := us(1, 2, 3, 4), us(1.5, 2.5, 3.5)
	if n := testing.AllocsPerRun(100, func() { scopes.KSDistance(a, b) }); n != 0 {
		t.Fatalf("KSDistance allocates %v times per run", n)
	}
}

// sameMeanDifferentTails: every statistic a scope reports agrees within
// 10 µs (mean 100.5 µs on both sides, min, max 200 µs, stddev ≈ 7 µs,
// count 1000) but the software p99 is 150 µs where the wire's is 100 µs:
// 1.5 % of the messages were stamped 50 µs late. Only the quantiles see it.
func sameMeanDifferentTails() (wire, software []float64) {
	wire = append(repeat(995, 100), repeat(5, 200)...)
	b := (100.5 - (15*150+200)/1000.0) / 0.984
	software = append(append(repeat(984, b), repeat(15, 150)...), repeat(1, 200)...)
	return wire, software
}

func TestCompareDistributions(t *testing.T) {
	tol := scopes.Tolerance{AbsS: 15e-6}
	wire, sw := sameMeanDifferentTails()
	for _, tc := range []struct {
		name         string
		scope, soft  []float64
		agree        bool
		p50, p99     bool // row verdicts
		ksMin, ksMax float64
		explain      string
	}{
		{"same distribution, independent draws", expTail(1, 5000, 100, 20), expTail(2, 5000, 100, 20), true, true, true, 0, 0.05, "distributions agree"},
		{"identical", expTail(3, 2000, 50, 5), expTail(3, 2000, 50, 5), true, true, true, 0, 0, "distributions agree"},
		// KS is scale-free: the software bulk sits 0.36 µs below the
		// wire's, so D is near 1 although no timing tolerance could see
		// that — which is why D is reported and the quantiles are judged.
		{"same mean, different tails", wire, sw, false, true, false, 0.98, 0.99, "p99: scope 100.000µs vs software 150.000µs"},
		{"software shifted by 1 ms", expTail(4, 1000, 100, 20), expTail(5, 1000, 1100, 20), false, false, false, 0.99, 1, "p50: scope"},
		{"heavier software tail", expTail(6, 5000, 100, 10), expTail(7, 5000, 100, 30), false, true, false, 0.2, 0.6, "p99"},
		{"few samples: p99 near max, said so", us(10, 11, 12), us(10, 11, 12), true, true, true, 0, 0, "fewer than 100 samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.scope)
			c := scopes.CompareDistributions(tc.scope, tc.soft, tol)
			if !slices.Equal(before, tc.scope) {
				t.Fatal("CompareDistributions reordered the caller's slice")
			}
			if c.Agree != tc.agree || len(c.Rows) != 2 || c.Rows[0].Agree != tc.p50 || c.Rows[1].Agree != tc.p99 {
				t.Fatalf("agree=%v rows=%+v, want agree=%v p50=%v p99=%v: %s", c.Agree, c.Rows, tc.agree, tc.p50, tc.p99, c.Explanation)
			}
			if c.Rows[0].Name != "p50" || c.Rows[1].Name != "p99" {
				t.Fatalf("rows %q %q, want p50 p99", c.Rows[0].Name, c.Rows[1].Name)
			}
			if c.KS < tc.ksMin || c.KS > tc.ksMax {
				t.Fatalf("KS = %.4f, want %.3f..%.3f", c.KS, tc.ksMin, tc.ksMax)
			}
			if c.KSCritical <= 0 || c.NScope != len(tc.scope) || c.NSoftware != len(tc.soft) {
				t.Fatalf("critical %g, n %d/%d", c.KSCritical, c.NScope, c.NSoftware)
			}
			if !strings.Contains(c.Explanation, tc.explain) || !strings.Contains(c.Explanation, "KS D=") {
				t.Fatalf("explanation %q does not contain %q and the KS figure", c.Explanation, tc.explain)
			}
			t.Log(c.Explanation)
		})
	}
}

func TestCompareDistributionsEmpty(t *testing.T) {
	for _, tc := range []struct {
		scope, soft []float64
		want        string
	}{
		{nil, us(1), "no per-message delays on the scope side"},
		{us(1), nil, "no per-message delays on the software side"},
		{nil, nil, "no per-message delays on either side"},
	} {
		c := scopes.CompareDistributions(tc.scope, tc.soft, scopes.Tolerance{AbsS: 1})
		if c.Agree || len(c.Rows) != 0 || !strings.Contains(c.Explanation, tc.want) {
			t.Errorf("agree=%v rows=%d %q, want not agreeing and %q", c.Agree, len(c.Rows), c.Explanation, tc.want)
		}
	}
}

func TestCrossValidateDelays(t *testing.T) {
	tol := scopes.Tolerance{AbsS: 10e-6}
	wire, sw := sameMeanDifferentTails()
	ws, ss := scopes.StatsFromDelays(wire), scopes.StatsFromDelays(sw)

	// The statistics alone agree on every row: this is the blind spot.
	if c := scopes.CrossValidate(ws, ss, tol); !c.Agree {
		t.Fatalf("precondition: the five statistics should agree: %s", c.Explanation)
	}
	c := scopes.CrossValidateDelays(ws, ss, wire, sw, tol)
	if c.Agree || c.Distribution == nil || len(c.Rows) != 7 {
		t.Fatalf("agree=%v dist=%v rows=%d, want disagreement on p99 with 7 rows: %s", c.Agree, c.Distribution, len(c.Rows), c.Explanation)
	}
	if c.Rows[0].Name != "mean" || !c.Rows[0].Agree || c.Rows[4].Name != "count" || c.Rows[6].Name != "p99" || c.Rows[6].Agree {
		t.Fatalf("rows %+v: want mean agreeing at 0, count at 4, p99 failing at 6", c.Rows)
	}
	if !strings.Contains(c.Explanation, "means agree") || !strings.Contains(c.Explanation, "p99") {
		t.Fatalf("explanation %q should say the means agree and p99 does not", c.Explanation)
	}

	// Same samples on both sides agree, and the figures are appended.
	c = scopes.CrossValidateDelays(ws, ws, wire, wire, tol)
	if !c.Agree || c.Distribution == nil || c.Distribution.KS != 0 || !strings.Contains(c.Explanation, "distributions agree") {
		t.Fatalf("identical samples: %s", c.Explanation)
	}

	// Without delays on one side it is exactly CrossValidate.
	c = scopes.CrossValidateDelays(ws, ss, nil, sw, tol)
	if !c.Agree || c.Distribution != nil || len(c.Rows) != 5 {
		t.Fatalf("no scope delays: agree=%v dist=%v rows=%d", c.Agree, c.Distribution, len(c.Rows))
	}

	// A mean disagreement stays a disagreement and keeps its explanation.
	late := slices.Clone(sw)
	for i := range late {
		late[i] += 1e-3
	}
	c = scopes.CrossValidateDelays(ws, scopes.StatsFromDelays(late), wire, late, tol)
	if c.Agree || !strings.Contains(c.Explanation, "mean: scope") {
		t.Fatalf("1 ms late software: %s", c.Explanation)
	}
}
