package report

import (
	"math"
	"slices"
)

// Repetitions of a comparison cell (issue 37): each middleware of a cell
// runs R times, interleaved, and the figures that decide "which bus is
// faster" are computed across those runs, because the variation that
// flips a table from one run to the next is between runs, not between
// the messages of one run (a bootstrap over messages would claim a
// confidence the next run does not reproduce). Everything here is a pure
// function of the per-repetition values.

// Stat is a latency statistic the comparison judges per repetition.
type Stat int

// The judged statistics, in table order.
const (
	StatP50 Stat = iota
	StatP99
	StatP999
	StatMax
	StatJitter
	numStats
)

// Stats are the judged statistics in table order.
var Stats = []Stat{StatP50, StatP99, StatP999, StatMax, StatJitter}

// String names the statistic as tables do: "p50", "p99", "p99.9", "max",
// "jitter".
func (s Stat) String() string {
	switch s {
	case StatP50:
		return "p50"
	case StatP99:
		return "p99"
	case StatP999:
		return "p99.9"
	case StatMax:
		return "max"
	case StatJitter:
		return "jitter"
	}
	return "stat?"
}

// Of reads the statistic from a summary, in ns.
func (s Stat) Of(sum Summary) float64 {
	switch s {
	case StatP50:
		return float64(sum.P50)
	case StatP99:
		return float64(sum.P99)
	case StatP999:
		return float64(sum.P999)
	case StatMax:
		return float64(sum.Max)
	case StatJitter:
		return float64(sum.Jitter)
	}
	return 0
}

// MinSamples is how many samples one repetition needs for the statistic
// to be more than indicative: a percentile q needs at least ten samples
// beyond it (p50: 20, p99: 1000, p99.9: 10000), else it is an order
// statistic of a handful of messages (the p99 of 120 samples is the
// second-worst message). 0 for max and jitter, which are what they are at
// any count.
func (s Stat) MinSamples() int64 {
	q := 0.0
	switch s {
	case StatP50:
		q = 0.50
	case StatP99:
		q = 0.99
	case StatP999:
		q = 0.999
	default:
		return 0
	}
	return int64(math.Ceil(10/(1-q) - 1e-9))
}

// RepStat is one statistic of one middleware across the repetitions of a
// cell: the median over repetitions and the spread (min–max), in ns.
type RepStat struct {
	Median, Min, Max float64
	// Reps is how many repetitions measured the statistic (non-zero).
	Reps int
	// Samples is the fewest samples any of those repetitions had.
	Samples int64
	// Indicative: Samples is below the statistic's MinSamples; the figure
	// is shown, marked "from N samples".
	Indicative bool
}

// RepStatOf summarises one statistic over the given repetitions' values
// (ns; zero values, statistics a repetition did not measure, are left
// out) and sample counts.
func RepStatOf(s Stat, values []float64, samples []int64) RepStat {
	var xs []float64
	var rs RepStat
	for i, v := range values {
		if v <= 0 {
			continue
		}
		xs = append(xs, v)
		if n := samples[i]; rs.Reps == 0 || n < rs.Samples {
			rs.Samples = n
		}
		rs.Reps++
	}
	if len(xs) == 0 {
		return RepStat{}
	}
	rs.Median = Median(xs)
	rs.Min, rs.Max = slices.Min(xs), slices.Max(xs)
	rs.Indicative = rs.Samples < s.MinSamples()
	return rs
}

// Median of xs (not empty); xs is not modified.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Call is the verdict on one ratio between two middlewares.
type Call string

// Calls. Faster and slower are said of the numerator (hilrig): "faster"
// means its statistic is lower than the other middleware's.
const (
	CallFaster            Call = "faster"
	CallSlower            Call = "slower"
	CallIndistinguishable Call = "indistinguishable"
	// CallTooFew: too few repetitions on one side for any difference to
	// be significant at the confidence asked (a rank test of 3 against 3
	// never reaches 95 %; 4 against 4 is the least, 5 the lab default).
	CallTooFew Call = "too few repetitions"
)

// Significant says whether the call is a difference (faster or slower).
func (c Call) Significant() bool { return c == CallFaster || c == CallSlower }

// RatioCI is the ratio a/b of two middlewares' statistic with its
// confidence interval across repetitions and the call it supports.
type RatioCI struct {
	// Ratio is median(a)/median(b); 0 when not computable (a side
	// measured nothing).
	Ratio float64
	// Lo, Hi bound the ratio at the confidence asked; both 0 when the
	// repetitions are too few to bound it.
	Lo, Hi float64
	Call   Call
}

// CompareRepetitions judges a against b, the per-repetition values of one
// statistic (ns, > 0; others are left out) of two middlewares in the same
// cell, at confidence conf (e.g. 0.95).
//
// The interval is the distribution-free one that inverts the two-sided
// Mann-Whitney rank test on the logarithms (Hodges–Lehmann): of the n·m
// pairwise log ratios ln aᵢ − ln bⱼ, sorted, it spans the k-th smallest to
// the k-th largest, k − 1 being the largest U with P(U ≤ k − 1) ≤ (1 −
// conf)/2 under the exact null distribution. The interval excludes 1
// exactly when the rank test rejects "same distribution", so the call is
// faster (interval below 1), slower (above) or indistinguishable. When no
// such k exists — fewer than 4 repetitions a side at 95 % — the call is
// CallTooFew: nothing the runs show can be called a difference.
func CompareRepetitions(a, b []float64, conf float64) RatioCI {
	a, b = positive(a), positive(b)
	if len(a) == 0 || len(b) == 0 {
		return RatioCI{Call: CallTooFew}
	}
	out := RatioCI{Ratio: Median(a) / Median(b), Call: CallTooFew}
	k := rankCritical(len(a), len(b), (1-conf)/2)
	if k == 0 {
		return out
	}
	d := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			d = append(d, math.Log(x)-math.Log(y))
		}
	}
	slices.Sort(d)
	lo, hi := d[k-1], d[len(d)-k]
	out.Lo, out.Hi = math.Exp(lo), math.Exp(hi)
	switch {
	case hi < 0:
		out.Call = CallFaster
	case lo > 0:
		out.Call = CallSlower
	default:
		out.Call = CallIndistinguishable
	}
	return out
}

func positive(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// rankCritical is k = c + 1 for the largest c with P(U ≤ c) ≤ tail under
// the exact null distribution of the Mann-Whitney U of samples of n and m,
// or 0 when even P(U = 0) exceeds tail (too few values to reject).
func rankCritical(n, m int, tail float64) int {
	k := 0
	for u, p := range RankNullCDF(n, m) {
		if p > tail+1e-12 {
			break
		}
		k = u + 1
	}
	return k
}

// RankNullCDF returns P(U ≤ u) for u = 0..n·m, U the Mann–Whitney
// statistic of two samples of sizes n and m under the null hypothesis (no
// ties), computed exactly by counting arrangements: N(i, j, u) =
// N(i−1, j, u−j) + N(i, j−1, u) (the last element an a, which adds j to U,
// or a b, which adds nothing). Cost O(n²m²): meant for repetition counts
// and trend windows (tens), not for samples of messages.
func RankNullCDF(n, m int) []float64 {
	cnt := make([][][]float64, n+1)
	for i := range cnt {
		cnt[i] = make([][]float64, m+1)
		for j := range cnt[i] {
			c := make([]float64, i*j+1)
			switch {
			case i == 0 || j == 0:
				c[0] = 1
			default:
				for u := range c {
					if u >= j && u-j < len(cnt[i-1][j]) {
						c[u] += cnt[i-1][j][u-j]
					}
					if u < len(cnt[i][j-1]) {
						c[u] += cnt[i][j-1][u]
					}
				}
			}
			cnt[i][j] = c
		}
	}
	d := cnt[n][m]
	total := 0.0
	for _, v := range d {
		total += v
	}
	cdf := make([]float64, len(d))
	acc := 0.0
	for u, v := range d {
		acc += v
		cdf[u] = acc / total
	}
	return cdf
}
