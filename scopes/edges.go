package scopes

import "math"

// Edge is one transition seen on a channel. TimeNs is nanoseconds on the
// capturing instrument's own timebase (a sample clock, or CLOCK_MONOTONIC
// for the simulated GPIO chip); only differences between edges of the same
// capture are meaningful.
type Edge struct {
	TimeNs int64
	Rising bool
}

// PairDelays pairs source and destination edges the way a scope's DELAY
// measurement does and appends each delay in nanoseconds to dst.
//
// Both slices must be sorted by TimeNs. Only edges of the requested
// polarities take part. Each destination edge closes the most recent
// unpaired source edge before it (a scope's forward search from the source
// edge to the next destination edge); a source edge superseded by a later
// source edge before any destination edge appears is dropped, as is a
// destination edge with no source edge before it. limit > 0 stops after
// that many delays (the population limit).
//
// PairDelays does not allocate beyond growing dst.
func PairDelays(dst []int64, src, dest []Edge, srcPol, dstPol Polarity, limit int) []int64 {
	wantS, wantD := srcPol == Rising, dstPol == Rising
	i, n := 0, 0
	for _, d := range dest {
		if d.Rising != wantD {
			continue
		}
		have := false
		var last int64
		for i < len(src) && src[i].TimeNs <= d.TimeNs {
			if src[i].Rising == wantS {
				last, have = src[i].TimeNs, true
			}
			i++
		}
		if !have {
			continue
		}
		dst = append(dst, d.TimeNs-last)
		n++
		if limit > 0 && n >= limit {
			break
		}
	}
	return dst
}

// StatsFromDelays computes mean, min, max, population standard deviation
// (1/N) and count of delays given in seconds. An empty input gives
// Count{0, true} and every other statistic missing. Welford's update keeps
// the standard deviation accurate for long soaks.
func StatsFromDelays(delays []float64) Stats {
	s := Stats{Count: Count{N: int64(len(delays)), OK: true}}
	if len(delays) == 0 {
		return s
	}
	var mean, m2 float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, d := range delays {
		delta := d - mean
		mean += delta / float64(i+1)
		m2 += delta * (d - mean)
		lo = math.Min(lo, d)
		hi = math.Max(hi, d)
	}
	s.Mean, s.Min, s.Max = Some(mean), Some(lo), Some(hi)
	s.StdDev = Some(math.Sqrt(m2 / float64(len(delays))))
	return s
}

// NsToSeconds converts nanosecond delays to seconds, appending to dst.
func NsToSeconds(dst []float64, ns []int64) []float64 {
	for _, v := range ns {
		dst = append(dst, float64(v)*1e-9)
	}
	return dst
}
