package report_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hilrig/hilrig/report"
)

func TestHistogramRecordZeroAllocs(t *testing.T) {
	h := report.NewHistogram()
	v := int64(1)
	allocs := testing.AllocsPerRun(10000, func() {
		h.Record(v)
		v = (v*7 + 13) % (2 * report.HistogramHighestNs)
	})
	if allocs != 0 {
		t.Fatalf("Record allocates %.1f per op, want 0", allocs)
	}
	// Out-of-range values take the clamping branch: still no allocation.
	allocs = testing.AllocsPerRun(1000, func() { h.Record(-5); h.Record(math.MaxInt64) })
	if allocs != 0 {
		t.Fatalf("clamped Record allocates %.1f per op, want 0", allocs)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := report.NewHistogram()
	b.ReportAllocs()
	v := int64(12345)
	for b.Loop() {
		h.Record(v)
		v = (v*1103515245 + 12345) & 0x3fffffff // up to ~1 s, spreads over buckets
	}
}

// BenchmarkHistogramRecordBaseline records the same values straight into
// hdrhistogram-go: the wrapper's clamping should cost ~nothing over it
// (compare the two ns/op from one run).
func BenchmarkHistogramRecordBaseline(b *testing.B) {
	h := hdr.New(report.HistogramLowestNs, report.HistogramHighestNs, report.HistogramSigFigs)
	b.ReportAllocs()
	v := int64(12345)
	for b.Loop() {
		_ = h.RecordValue(v)
		v = (v*1103515245 + 12345) & 0x3fffffff
	}
}

func TestHistogramSummaryKnownData(t *testing.T) {
	h := report.NewHistogram()
	for i := int64(1); i <= 10000; i++ { // 1 µs .. 10 ms uniformly
		h.Record(i * 1000)
	}
	s := h.Summary()
	within := func(name string, got, want int64) {
		t.Helper()
		if d := math.Abs(float64(got-want)) / float64(want); d > 0.002 {
			t.Errorf("%s = %d, want %d ±0.2%%", name, got, want)
		}
	}
	if s.Count != 10000 {
		t.Fatalf("count = %d", s.Count)
	}
	within("min", s.Min, 1000)
	within("p50", s.P50, 5_000_000)
	within("p90", s.P90, 9_000_000)
	within("p99", s.P99, 9_900_000)
	within("p999", s.P999, 9_990_000)
	within("max", s.Max, 10_000_000)
	within("mean", int64(s.Mean), 5_000_500)
	within("stddev", int64(s.StdDev), 2_886_751) // uniform: range/sqrt(12)
	if s.Jitter != s.P99-s.P50 {
		t.Errorf("jitter = %d, want P99-P50 = %d", s.Jitter, s.P99-s.P50)
	}
	if (report.NewHistogram().Summary() != report.Summary{}) {
		t.Error("empty histogram summary not zero")
	}
}

func TestHistogramClampAndMerge(t *testing.T) {
	a := report.NewHistogram()
	a.Record(-1)
	a.Record(report.HistogramHighestNs + 1)
	a.Record(500)
	if a.Clamped() != 2 || a.Count() != 3 {
		t.Fatalf("clamped=%d count=%d, want 2 and 3", a.Clamped(), a.Count())
	}
	if s := a.Summary(); s.Max < report.HistogramHighestNs*999/1000 || s.Clamped != 2 {
		t.Errorf("summary %+v: max should be the clamp ceiling, clamped 2", s)
	}
	b := report.NewHistogram()
	b.Record(100)
	b.Merge(a)
	if b.Count() != 4 || b.Clamped() != 2 {
		t.Errorf("merged count=%d clamped=%d, want 4 and 2", b.Count(), b.Clamped())
	}
	b.Reset()
	if b.Count() != 0 || b.Clamped() != 0 {
		t.Errorf("after reset count=%d clamped=%d", b.Count(), b.Clamped())
	}
}

func TestHistogramTextAndJSONRoundTrip(t *testing.T) {
	h := report.NewHistogram()
	for i := int64(0); i < 5000; i++ {
		h.Record(20_000 + i*i%700_000)
	}
	txt, err := h.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var back report.Histogram
	if err := back.UnmarshalText(txt); err != nil {
		t.Fatal(err)
	}
	if back.Summary() != h.Summary() {
		t.Errorf("text round trip: %+v != %+v", back.Summary(), h.Summary())
	}
	type wrap struct {
		H *report.Histogram `json:"h"`
	}
	js, err := json.Marshal(wrap{h})
	if err != nil {
		t.Fatal(err)
	}
	var w wrap
	if err := json.Unmarshal(js, &w); err != nil {
		t.Fatal(err)
	}
	if w.H.Summary() != h.Summary() {
		t.Errorf("json round trip: %+v != %+v", w.H.Summary(), h.Summary())
	}
	// The decoded histogram is fully usable (records, merges).
	w.H.Record(1)
	if w.H.Count() != h.Count()+1 {
		t.Errorf("decoded histogram count after record = %d", w.H.Count())
	}
}

func TestHistogramUnmarshalRejectsGarbage(t *testing.T) {
	for _, in := range []string{"!!!", "AAAA", "HIQTEwAAAAA=", "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBoaXN0b2dyYW0="} {
		var h report.Histogram
		err := h.UnmarshalText([]byte(in))
		if !errors.Is(err, report.ErrBadHistogram) {
			t.Errorf("UnmarshalText(%q) = %v, want ErrBadHistogram", in, err)
		}
	}
	var h report.Histogram
	if err := json.Unmarshal([]byte(`123`), &h); !errors.Is(err, report.ErrBadHistogram) {
		t.Errorf("json number: %v", err)
	}
}

func FuzzHistogramUnmarshalText(f *testing.F) {
	h := report.NewHistogram()
	h.Record(1000)
	h.Record(2_000_000)
	txt, _ := h.MarshalText()
	f.Add(txt)
	f.Add([]byte("HISTFAAAAA=="))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h report.Histogram
		if err := h.UnmarshalText(b); err != nil {
			return
		}
		_ = h.Summary()
		if _, err := h.MarshalText(); err != nil {
			t.Fatalf("re-encode of decoded histogram: %v", err)
		}
	})
}
