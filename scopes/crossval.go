package scopes

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tolerance bounds how far a scope statistic may differ from the software
// statistic for the two to agree: |scope − software| <= AbsS + Rel·|scope|.
// AbsS is in seconds; Rel is a fraction (0.05 = 5 %).
type Tolerance struct {
	AbsS float64
	Rel  float64
}

// Comparison is one statistic compared between scope and software.
type Comparison struct {
	// Name is "mean", "min", "max", "stddev" or "count".
	Name string
	// Scope and Software are the two values (seconds, or a count).
	Scope, Software float64
	// Diff is Scope − Software.
	Diff float64
	// Compared is false when either side is missing the statistic.
	Compared bool
	// Agree is true when Compared and |Diff| is within the tolerance.
	Agree bool
}

// CrossCheck is the verdict of [CrossValidate].
type CrossCheck struct {
	Rows []Comparison
	// Agree is true when every compared row agrees and at least the mean
	// was compared; a check with nothing to compare never agrees.
	Agree bool
	// Explanation says in words what disagreed, by how much and in which
	// direction, or why nothing could be compared.
	Explanation string
	// Distribution is the quantile and KS comparison of the per-message
	// delays ([CrossValidateDelays]); nil when delays were not available
	// from both sides.
	Distribution *DistributionCheck
}

// CrossValidate compares the scope's statistics with the software latency
// statistics for the same messages. The difference is always scope minus
// software: a negative mean difference means the software timestamps
// claim more latency than the wire shows (timestamps taken late or
// includes queueing after the marker edge); a positive one means the
// software under-reports (stamped before the real send, or the receiver's
// stamp is taken before the callback runs).
//
// Counts are compared exactly (a mismatch means edges and messages do not
// correspond, which invalidates the comparison); min/max/stddev use tol
// like the mean. Pure function; safe for concurrent use.
func CrossValidate(scope, software Stats, tol Tolerance) CrossCheck {
	var c CrossCheck
	var why []string
	add := func(name string, a, b Value) {
		r := Comparison{Name: name, Scope: a.V, Software: b.V, Compared: a.OK && b.OK}
		if r.Compared {
			r.Diff = a.V - b.V
			r.Agree = math.Abs(r.Diff) <= tol.AbsS+tol.Rel*math.Abs(a.V)
			if !r.Agree {
				dir := "more"
				if r.Diff < 0 {
					dir = "less"
				}
				why = append(why, fmt.Sprintf("%s: scope %s vs software %s (scope shows %s %s, tolerance ±%s)",
					name, FormatSeconds(a.V), FormatSeconds(b.V), FormatSeconds(math.Abs(r.Diff)), dir,
					FormatSeconds(tol.AbsS+tol.Rel*math.Abs(a.V))))
			}
		} else {
			side := "scope"
			if a.OK {
				side = "software"
			}
			why = append(why, fmt.Sprintf("%s: not compared, missing on the %s side", name, side))
		}
		c.Rows = append(c.Rows, r)
	}
	add("mean", scope.Mean, software.Mean)
	add("min", scope.Min, software.Min)
	add("max", scope.Max, software.Max)
	add("stddev", scope.StdDev, software.StdDev)
	cr := Comparison{Name: "count", Scope: float64(scope.Count.N), Software: float64(software.Count.N),
		Compared: scope.Count.OK && software.Count.OK}
	if cr.Compared {
		cr.Diff = cr.Scope - cr.Software
		cr.Agree = cr.Diff == 0
		if !cr.Agree {
			why = append(why, fmt.Sprintf("count: scope saw %d delays, software %d messages — edges and messages do not correspond one to one",
				scope.Count.N, software.Count.N))
		}
	} else {
		why = append(why, "count: not compared, missing on one side")
	}
	c.Rows = append(c.Rows, cr)

	c.Agree = c.Rows[0].Compared
	for _, r := range c.Rows {
		if r.Compared && !r.Agree {
			c.Agree = false
		}
	}
	switch {
	case !c.Rows[0].Compared:
		c.Explanation = "cannot cross-validate: the mean is missing on at least one side; " + strings.Join(why, "; ")
	case c.Agree:
		c.Explanation = fmt.Sprintf("scope and software agree: mean differs by %s (scope − software)", FormatSeconds(c.Rows[0].Diff))
		if len(why) > 0 {
			c.Explanation += "; " + strings.Join(why, "; ")
		}
	default:
		c.Explanation = "scope and software disagree — the software timestamps do not match the wire: " + strings.Join(why, "; ")
	}
	return c
}

// DistributionCheck compares the per-message delays behind the scope's
// statistics with the software latency samples of the same messages:
// the median and the 99th percentile within the tolerance, plus the
// two-sample Kolmogorov–Smirnov distance as a figure. Same mean with
// different tails (a software stamp that is late only sometimes) passes
// the mean comparison and fails here on p99.
type DistributionCheck struct {
	// Rows are "p50" and "p99" (seconds), scope − software, judged with
	// the same [Tolerance] as the mean.
	Rows []Comparison
	// KS is the two-sample Kolmogorov–Smirnov distance
	// D = sup_x |F_scope(x) − F_software(x)| of the two empirical
	// distribution functions, 0 (identical) … 1 (disjoint). Reported,
	// not judged: a rack bounds the quantiles, not D.
	KS float64
	// KSCritical is D at α = 0.05 for these sample sizes
	// (1.358·√((n+m)/(n·m)), asymptotic): a reading aid for KS — above it
	// the two samples are unlikely to come from one distribution. With
	// thousands of samples it is far smaller than any timing tolerance
	// can see, so it is not a verdict.
	KSCritical float64
	// NScope and NSoftware are the sample sizes.
	NScope, NSoftware int
	// Agree is true when both quantiles were compared and agree.
	Agree bool
	// Explanation says what disagreed, or the figures when all agreed.
	Explanation string
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted (ascending) by
// linear interpolation between closest ranks (Hyndman–Fan type 7, the
// default of R and NumPy). NaN for an empty slice. Pure function.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	q = math.Min(math.Max(q, 0), 1)
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// KSDistance returns the two-sample Kolmogorov–Smirnov statistic
// sup_x |F_a(x) − F_b(x)| of two ascending-sorted samples; 0 when either
// is empty. Ties are stepped over together, so identical samples give 0.
// Pure function, no allocation.
func KSDistance(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	na, nb := float64(len(a)), float64(len(b))
	i, j := 0, 0
	var d float64
	for i < len(a) && j < len(b) {
		x := math.Min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/na-float64(j)/nb))
	}
	return d
}

// CompareDistributions compares two samples of delays in seconds: p50 and
// p99 of scope − software within tol (|diff| ≤ AbsS + Rel·|scope
// quantile|), and the KS distance reported. Either side empty gives a
// check that does not agree and says which side had no delays. The
// inputs are not modified (sorted copies are made). Pure function; safe
// for concurrent use.
//
// With fewer than 100 samples on a side p99 is close to that side's
// maximum; it is still compared (a tail that differs is a tail that
// differs), and the Explanation says so.
func CompareDistributions(scope, software []float64, tol Tolerance) DistributionCheck {
	c := DistributionCheck{NScope: len(scope), NSoftware: len(software)}
	if len(scope) == 0 || len(software) == 0 {
		side := "the scope side"
		switch {
		case len(scope) == 0 && len(software) == 0:
			side = "either side"
		case len(scope) > 0:
			side = "the software side"
		}
		c.Explanation = "distributions not compared: no per-message delays on " + side
		return c
	}
	a := append([]float64(nil), scope...)
	b := append([]float64(nil), software...)
	slices.Sort(a)
	slices.Sort(b)
	c.Agree = true
	var why []string
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		sa, sb := Quantile(a, q.q), Quantile(b, q.q)
		r := Comparison{Name: q.name, Scope: sa, Software: sb, Diff: sa - sb, Compared: true}
		lim := tol.AbsS + tol.Rel*math.Abs(sa)
		r.Agree = math.Abs(r.Diff) <= lim
		if !r.Agree {
			c.Agree = false
			dir := "more"
			if r.Diff < 0 {
				dir = "less"
			}
			why = append(why, fmt.Sprintf("%s: scope %s vs software %s (scope shows %s %s, tolerance ±%s)",
				q.name, FormatSeconds(sa), FormatSeconds(sb), FormatSeconds(math.Abs(r.Diff)), dir, FormatSeconds(lim)))
		}
		c.Rows = append(c.Rows, r)
	}
	c.KS = KSDistance(a, b)
	na, nb := float64(len(a)), float64(len(b))
	c.KSCritical = 1.358 * math.Sqrt((na+nb)/(na*nb))
	figs := fmt.Sprintf("p50 Δ %s, p99 Δ %s, KS D=%.3f (α=0.05 critical %.3f; reported, not judged), n=%d/%d",
		FormatSeconds(c.Rows[0].Diff), FormatSeconds(c.Rows[1].Diff), c.KS, c.KSCritical, len(a), len(b))
	if len(a) < 100 || len(b) < 100 {
		figs += " (fewer than 100 samples on a side: p99 is close to the maximum)"
	}
	if c.Agree {
		c.Explanation = "distributions agree: " + figs
	} else {
		c.Explanation = "distributions disagree — " + strings.Join(why, "; ") + "; " + figs
	}
	return c
}

// CrossValidateDelays is [CrossValidate] plus, when per-message delays
// (seconds) are available from both sides, [CompareDistributions]: its p50
// and p99 rows are appended to Rows after the five statistic rows (so
// Rows[0] is still the mean and Rows[4] the count), Distribution is set,
// and the verdict requires the quantiles to agree too. With either delay
// slice empty it is exactly CrossValidate with Distribution nil. Pure
// function; safe for concurrent use.
func CrossValidateDelays(scope, software Stats, scopeDelays, softwareDelays []float64, tol Tolerance) CrossCheck {
	c := CrossValidate(scope, software, tol)
	if len(scopeDelays) == 0 || len(softwareDelays) == 0 {
		return c
	}
	d := CompareDistributions(scopeDelays, softwareDelays, tol)
	c.Distribution = &d
	c.Rows = append(c.Rows, d.Rows...)
	if !d.Agree && c.Agree {
		c.Agree = false
		c.Explanation = "scope and software disagree — the means agree but the " + d.Explanation
		return c
	}
	c.Explanation += "; " + d.Explanation
	return c
}
