// Package report holds the rig's measurement model and its judges: the HDR
// latency histogram every endpoint records into, the versioned result file of
// a run, bounds and verdicts, soak checkpoints and their trend verdicts, the
// HTML report and the baseline comparison.
//
// Data flows one way into this package; it imports nothing of the harness.
package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range. Values are nanoseconds.
const (
	// HistogramLowestNs is the lowest discernible value (1 ns).
	HistogramLowestNs = 1
	// HistogramHighestNs is the highest trackable value (60 s). Larger values
	// are clamped to it and counted in Clamped.
	HistogramHighestNs = int64(60e9)
	// HistogramSigFigs is the number of significant decimal digits kept
	// (relative error ≤ 0.1 % at every magnitude).
	HistogramSigFigs = 3
)

// Histogram is an HDR latency histogram in nanoseconds (1 ns .. 60 s, 3
// significant digits) with constant memory (about 210 KiB) whatever the number
// of samples. It wraps github.com/HdrHistogram/hdrhistogram-go.
//
// A Histogram is not safe for concurrent use: one goroutine records, or the
// caller synchronises. The zero value is not usable; call NewHistogram.
type Histogram struct {
	h       *hdr.Histogram
	clamped int64
}

// NewHistogram returns an empty histogram. It allocates once (the counts
// array); nothing afterwards allocates on Record.
func NewHistogram() *Histogram {
	return &Histogram{h: hdr.New(HistogramLowestNs, HistogramHighestNs, HistogramSigFigs)}
}

// Record adds one latency sample in nanoseconds. It never allocates and never
// fails: negative values are clamped to 0 and values above HistogramHighestNs
// to HistogramHighestNs; both are counted in Clamped so a report can say how
// many samples were out of range instead of silently losing them.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
		h.clamped++
	} else if ns > HistogramHighestNs {
		ns = HistogramHighestNs
		h.clamped++
	}
	// In range by construction, so RecordValue cannot fail (and so does not
	// allocate its error).
	_ = h.h.RecordValue(ns)
}

// RecordN adds n samples of the same value (for replaying counts). n ≤ 0 is
// a no-op. Clamping as in Record.
func (h *Histogram) RecordN(ns, n int64) {
	if n <= 0 {
		return
	}
	if ns < 0 {
		ns = 0
		h.clamped += n
	} else if ns > HistogramHighestNs {
		ns = HistogramHighestNs
		h.clamped += n
	}
	_ = h.h.RecordValues(ns, n)
}

// Clamped reports how many recorded samples were outside [0, 60 s] and were
// clamped to the nearest end. It is carried through Merge but not through the
// text encoding (HDR V2 has no field for it); Summary carries it.
func (h *Histogram) Clamped() int64 { return h.clamped }

// Merge adds every sample of o into h. o is not modified. Samples of o that h
// cannot hold (only possible when o was decoded from a foreign, wider
// histogram) are clamped and counted.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.h == nil {
		return
	}
	h.clamped += o.clamped
	if dropped := h.h.Merge(o.h); dropped > 0 {
		// Values beyond our range: record them at the top, counted as clamped.
		h.clamped += dropped
		_ = h.h.RecordValues(HistogramHighestNs, dropped)
	}
}

// Reset empties the histogram (counts and Clamped) without freeing memory,
// so a window histogram can be reused allocation-free.
func (h *Histogram) Reset() {
	h.h.Reset()
	h.clamped = 0
}

// Count is the number of samples recorded (clamped ones included).
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Min, Max and ValueAtQuantile give single statistics in ns; see Summary for
// all of them in one pass. q is in percent (0..100).
func (h *Histogram) ValueAtQuantile(q float64) int64 { return h.h.ValueAtQuantile(q) }

// Bucket is one bar of a histogram's distribution: Count samples between
// FromNs (inclusive) and ToNs (inclusive), in nanoseconds.
type Bucket struct {
	FromNs, ToNs int64
	Count        int64
}

// Buckets returns the non-empty HDR buckets in ascending order (at most a few
// thousand for real latency data). It allocates; it is for plots, not hot paths.
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for _, b := range h.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		out = append(out, Bucket{FromNs: b.From, ToNs: b.To, Count: b.Count})
	}
	return out
}

// CDFPoint is one point of the cumulative distribution: Fraction of samples
// (0..1] are ≤ ValueNs.
type CDFPoint struct {
	ValueNs  int64
	Fraction float64
}

// CDF returns the cumulative distribution at every non-empty bucket. It
// allocates; it is for plots.
func (h *Histogram) CDF() []CDFPoint {
	total := h.Count()
	if total == 0 {
		return nil
	}
	var out []CDFPoint
	var cum int64
	for _, b := range h.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		out = append(out, CDFPoint{ValueNs: b.To, Fraction: float64(cum) / float64(total)})
	}
	return out
}

// Summary is the distribution of a histogram in nanoseconds.
//
// Percentiles are HDR values (within 0.1 % of the true sample value; the
// reported value is the highest value equivalent to the sample's bucket, so
// they never understate a tail). Mean and StdDev are population statistics
// computed from bucket midpoints.
//
// Jitter is defined as P99 − P50: the spread between the typical and the tail
// latency. It is robust to single outliers (unlike max − min) and, unlike the
// standard deviation, it means the same thing for skewed latency
// distributions; a bound on it says "the tail is at most this far above the
// typical case".
type Summary struct {
	Count   int64   `json:"count" yaml:"count"`
	Min     int64   `json:"min_ns" yaml:"min_ns"`
	P50     int64   `json:"p50_ns" yaml:"p50_ns"`
	P90     int64   `json:"p90_ns" yaml:"p90_ns"`
	P99     int64   `json:"p99_ns" yaml:"p99_ns"`
	P999    int64   `json:"p999_ns" yaml:"p999_ns"`
	Max     int64   `json:"max_ns" yaml:"max_ns"`
	Mean    float64 `json:"mean_ns" yaml:"mean_ns"`
	StdDev  float64 `json:"stddev_ns" yaml:"stddev_ns"`
	Jitter  int64   `json:"jitter_ns" yaml:"jitter_ns"`
	Clamped int64   `json:"clamped,omitempty" yaml:"clamped,omitempty"`
}

// summaryQuantiles are the percentiles Summary reads, in one pass.
var summaryQuantiles = []float64{50, 90, 99, 99.9}

// Summary computes the distribution. An empty histogram gives a zero Summary.
// It allocates a little (not for hot paths); cost is one pass over the counts.
func (h *Histogram) Summary() Summary {
	n := h.Count()
	if n == 0 {
		return Summary{Clamped: h.clamped}
	}
	q := h.h.ValueAtPercentilesSlice(summaryQuantiles)
	s := Summary{
		Count:   n,
		Min:     h.h.Min(),
		P50:     q[0],
		P90:     q[1],
		P99:     q[2],
		P999:    q[3],
		Max:     h.h.Max(),
		Mean:    h.h.Mean(),
		StdDev:  h.h.StdDev(),
		Clamped: h.clamped,
	}
	s.Jitter = s.P99 - s.P50
	return s
}

// MarshalText encodes the histogram as HDR V2 compressed, base64 (the format
// of HdrHistogram's log files, readable by its Java/C/Python tools). A typical
// latency histogram encodes to a few hundred bytes. Clamped is not encoded.
// Allocates only the result (see AppendText).
func (h *Histogram) MarshalText() ([]byte, error) { return h.AppendText(nil) }

// AppendText appends the MarshalText form to dst: with a dst of enough
// capacity it does not allocate once warmed up (the process keeps one
// encoder state, see WarmEncoder), which keeps an agent's per-window
// reports off the GC of the board it measures. Safe for concurrent use on
// different histograms; concurrent calls take turns.
func (h *Histogram) AppendText(dst []byte) ([]byte, error) {
	if h == nil || h.h == nil {
		return dst, fmt.Errorf("%w: nil histogram", ErrBadHistogram)
	}
	b, err := appendV2(dst, h.h)
	if err != nil {
		return dst, fmt.Errorf("%w: encode: %v", ErrBadHistogram, err)
	}
	return b, nil
}

// UnmarshalText decodes the form MarshalText writes. A histogram of a
// different geometry (e.g. written by another tool) is re-recorded into the
// standard geometry; values beyond 60 s are clamped and counted. An empty
// input gives an empty histogram.
func (h *Histogram) UnmarshalText(b []byte) error {
	if h.h == nil {
		h.h = hdr.New(HistogramLowestNs, HistogramHighestNs, HistogramSigFigs)
	} else {
		h.Reset()
	}
	h.clamped = 0
	if len(b) == 0 {
		return nil
	}
	d, err := decodeBounded(b)
	if err != nil {
		return err
	}
	if d.LowestTrackableValue() == HistogramLowestNs && d.HighestTrackableValue() == HistogramHighestNs &&
		d.SignificantFigures() == HistogramSigFigs {
		h.h = d
		return nil
	}
	h.Merge(&Histogram{h: d})
	return nil
}

// maxDecodedCounts bounds the counts array a decoded header may ask for, so a
// hostile or corrupt file cannot make us allocate gigabytes. Our own geometry
// needs ~27k counts; 4M (32 MiB) leaves room for foreign 5-digit histograms.
const maxDecodedCounts = 4 << 20

func decodeBounded(b []byte) (*hdr.Histogram, error) {
	if err := checkEncodedGeometry(b); err != nil {
		return nil, err
	}
	d, err := hdr.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadHistogram, err)
	}
	return d, nil
}

// MarshalJSON encodes the histogram as a JSON string holding the text form
// (base64 needs no escaping). Allocates only the result.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	b, err := h.AppendText([]byte{'"'})
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// UnmarshalJSON decodes a JSON string of the text form (null gives an empty
// histogram).
func (h *Histogram) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return h.UnmarshalText(nil)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: want a JSON string: %v", ErrBadHistogram, err)
	}
	return h.UnmarshalText([]byte(s))
}

// Clone returns an independent copy.
func (h *Histogram) Clone() *Histogram {
	return &Histogram{h: h.h.Clone(), clamped: h.clamped}
}

// checkEncodedGeometry reads only the header of an encoded histogram and
// rejects geometries whose counts array would exceed maxDecodedCounts, before
// the decoder allocates it.
func checkEncodedGeometry(b []byte) error {
	// 8-byte outer header + the first bytes of the zlib stream suffice; decode
	// only a prefix of the base64 to stay cheap.
	prefix := b
	if len(prefix) > 4096 {
		prefix = prefix[:4096]
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(prefix)))
	n, err := base64.StdEncoding.Decode(raw, prefix[:len(prefix)/4*4])
	if err != nil {
		return fmt.Errorf("%w: base64: %v", ErrBadHistogram, err)
	}
	raw = raw[:n]
	if len(raw) < 8 {
		return fmt.Errorf("%w: %d bytes, too short for a header", ErrBadHistogram, len(raw))
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("%w: zlib: %v", ErrBadHistogram, err)
	}
	defer z.Close()
	var hd [40]byte
	if _, err := io.ReadFull(z, hd[:]); err != nil {
		return fmt.Errorf("%w: header: %v", ErrBadHistogram, err)
	}
	sig := int32(binary.BigEndian.Uint32(hd[12:16]))
	lowest := int64(binary.BigEndian.Uint64(hd[16:24]))
	highest := int64(binary.BigEndian.Uint64(hd[24:32]))
	if sig < 0 || sig > 5 || highest < 2 {
		return fmt.Errorf("%w: geometry sig=%d highest=%d", ErrBadHistogram, sig, highest)
	}
	if lowest < 1 {
		lowest = 1
	}
	largest := 2 * int64(math.Pow10(int(sig)))
	subMag := bits.Len64(uint64(largest - 1))
	unitMag := bits.Len64(uint64(lowest)) - 1
	if subMag+unitMag > 61 {
		return fmt.Errorf("%w: geometry lowest=%d sig=%d too wide", ErrBadHistogram, lowest, sig)
	}
	smallestUntrackable := int64(1) << uint(subMag+unitMag)
	buckets := int64(1)
	for smallestUntrackable <= highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	if counts := (buckets + 1) * (int64(1) << uint(subMag-1)); counts > maxDecodedCounts {
		return fmt.Errorf("%w: geometry needs %d counts (limit %d)", ErrBadHistogram, counts, maxDecodedCounts)
	}
	return nil
}
