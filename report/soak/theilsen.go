package soak

import (
	"fmt"
	"math"
	"slices"
)

// maxExactPoints is the largest series TheilSen fits exactly (n(n−1)/2 slopes,
// ~1.1 M for 1500 points, ~9 MB transient). Longer series are first reduced to
// this many bins by taking the median x and median y of consecutive points
// (a 72 h soak at 10 s windows has 25,920 points; 17 windows per bin keeps
// a resolution of ~3 minutes, far finer than any trend we judge).
const maxExactPoints = 1500

// TheilSen fits y = intercept + slope·x robustly: slope is the median of
// the pairwise slopes (pairs with equal x skipped), intercept the median of
// y − slope·x. It tolerates up to ~29 % outliers (its breakdown point), which
// is why soak verdicts use it: a few stalled windows must not read as a leak.
// NaN points are skipped. It needs at least 3 points with two distinct x
// values, otherwise it returns ErrTooFewPoints.
func TheilSen(x, y []float64) (slope, intercept float64, err error) {
	if len(x) != len(y) {
		return 0, 0, fmt.Errorf("soak: TheilSen: len(x)=%d != len(y)=%d", len(x), len(y))
	}
	px, py := make([]float64, 0, len(x)), make([]float64, 0, len(y))
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			continue
		}
		px, py = append(px, x[i]), append(py, y[i])
	}
	if len(px) < 3 {
		return 0, 0, fmt.Errorf("%w: %d", ErrTooFewPoints, len(px))
	}
	if len(px) > maxExactPoints {
		px, py = binMedians(px, py, maxExactPoints)
	}
	slopes := make([]float64, 0, len(px)*(len(px)-1)/2)
	for i := range px {
		for j := i + 1; j < len(px); j++ {
			if dx := px[j] - px[i]; dx != 0 {
				slopes = append(slopes, (py[j]-py[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0, 0, fmt.Errorf("%w: all x equal", ErrTooFewPoints)
	}
	slope = median(slopes)
	res := make([]float64, len(px))
	for i := range px {
		res[i] = py[i] - slope*px[i]
	}
	return slope, median(res), nil
}

// median sorts v in place and returns its median.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// binMedians reduces a series (assumed ordered by x) to nb points.
func binMedians(x, y []float64, nb int) ([]float64, []float64) {
	bx, by := make([]float64, 0, nb), make([]float64, 0, nb)
	n := len(x)
	for b := 0; b < nb; b++ {
		lo, hi := b*n/nb, (b+1)*n/nb
		if hi <= lo {
			continue
		}
		bx = append(bx, median(slices.Clone(x[lo:hi])))
		by = append(by, median(slices.Clone(y[lo:hi])))
	}
	return bx, by
}
