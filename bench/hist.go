package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// hist records latencies in nanoseconds (1 ns .. 60 s, 3 significant
// digits). Record is allocation free. Not safe for concurrent use.
type hist struct {
	h *hdrhistogram.Histogram
	// stamps, when keep made room, are the timed round trips in order
	// (--record): appended without allocating up to their capacity.
	stamps []stamp
}

// stamp is one timed round trip: its send time (Unix ns, wall clock)
// and its round-trip time (ns, monotonic).
type stamp struct{ sendNs, rttNs int64 }

// keep makes room to keep the next n round trips' stamps.
func (h *hist) keep(n int) { h.stamps = make([]stamp, 0, n) }

// recordAt adds one round trip sent at t0 that took d.
func (h *hist) recordAt(t0 time.Time, d time.Duration) {
	h.record(int64(d))
	if len(h.stamps) < cap(h.stamps) {
		h.stamps = append(h.stamps, stamp{t0.UnixNano(), int64(d)})
	}
}

const histMax = int64(60e9)

func newHist() *hist { return &hist{h: hdrhistogram.New(1, histMax, 3)} }

// record adds one value in ns, clamped into the trackable range.
func (h *hist) record(ns int64) {
	if ns < 1 {
		ns = 1
	}
	if ns > histMax {
		ns = histMax
	}
	_ = h.h.RecordValue(ns)
}

func (h *hist) merge(o *hist) { h.h.Merge(o.h) }

// Percentiles are latency percentiles in nanoseconds.
type Percentiles struct {
	Count int64 `json:"count"`
	Min   int64 `json:"min_ns"`
	P50   int64 `json:"p50_ns"`
	P90   int64 `json:"p90_ns"`
	P99   int64 `json:"p99_ns"`
	P999  int64 `json:"p999_ns"`
	Max   int64 `json:"max_ns"`
}

func (h *hist) percentiles() Percentiles {
	return Percentiles{
		Count: h.h.TotalCount(),
		Min:   h.h.Min(),
		P50:   h.h.ValueAtQuantile(50),
		P90:   h.h.ValueAtQuantile(90),
		P99:   h.h.ValueAtQuantile(99),
		P999:  h.h.ValueAtQuantile(99.9),
		Max:   h.h.Max(),
	}
}

// half returns the one-way estimate: every percentile of RTT/2 is the same
// percentile of RTT halved.
func (p Percentiles) half() Percentiles {
	return Percentiles{Count: p.Count, Min: p.Min / 2, P50: p.P50 / 2, P90: p.P90 / 2,
		P99: p.P99 / 2, P999: p.P999 / 2, Max: p.Max / 2}
}
