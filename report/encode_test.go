package report_test

import (
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hilrig/hilrig/report"
)

func sampleHistograms() map[string]*report.Histogram {
	r := rand.New(rand.NewPCG(1, 2))
	hs := map[string]*report.Histogram{"empty": report.NewHistogram()}
	one := report.NewHistogram()
	one.Record(12345)
	hs["one value"] = one
	win := report.NewHistogram()
	for range 250 {
		win.Record(20000 + r.Int64N(300000))
	}
	hs["window of 250"] = win
	wide := report.NewHistogram()
	for range 100000 {
		wide.Record(int64(r.ExpFloat64() * 50000))
	}
	wide.Record(0)
	wide.Record(1)
	wide.Record(report.HistogramHighestNs) // the last bucket
	wide.RecordN(777, 1<<40)               // a count needing 6+ LEB128 bytes
	hs["wide"] = wide
	return hs
}

// Our V2 encoder writes what hdrhistogram-go (and so Java/C/Python
// HdrHistogram) decode to the very same histogram, for empty, sparse,
// wide and huge-count histograms, and round-trips through UnmarshalText.
func TestAppendTextDecodesWithHdrhistogram(t *testing.T) {
	for name, h := range sampleHistograms() {
		t.Run(name, func(t *testing.T) {
			b, err := h.MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			d, err := hdr.Decode(b)
			if err != nil {
				t.Fatalf("hdr.Decode of our encoding: %v", err)
			}
			var back report.Histogram
			if err := back.UnmarshalText(b); err != nil {
				t.Fatal(err)
			}
			if d.TotalCount() != h.Count() || back.Count() != h.Count() {
				t.Fatalf("counts: hdr %d, round trip %d, want %d", d.TotalCount(), back.Count(), h.Count())
			}
			for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
				want := h.ValueAtQuantile(q)
				if got := d.ValueAtQuantile(q); got != want {
					t.Fatalf("p%v: hdr decodes %d, want %d", q, got, want)
				}
				if got := back.ValueAtQuantile(q); got != want {
					t.Fatalf("p%v: round trip %d, want %d", q, got, want)
				}
			}
			// The library's own encoding of the same histogram decodes equal.
			ref := report.LibraryEncodeForTest(h)
			rd, err := hdr.Decode(ref)
			if err != nil {
				t.Fatal(err)
			}
			if !rd.Equals(d) {
				t.Fatalf("our encoding and hdrhistogram-go's decode to different histograms")
			}
			j, err := h.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(j) != `"`+string(b)+`"` {
				t.Fatalf("MarshalJSON %q is not the quoted text form", j)
			}
		})
	}
}

// An agent encodes one histogram per window: with a buffer of enough
// capacity that must not allocate, and the counts must be read in place.
func TestAppendTextAllocs(t *testing.T) {
	if !report.CountsReadInPlaceForTest() {
		t.Fatal("hdr.Histogram's counts field moved: AppendText falls back to copying every counts array (update report/encode.go)")
	}
	h := sampleHistograms()["window of 250"]
	buf := make([]byte, 0, 64<<10)
	if _, err := h.AppendText(buf); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(200, func() { _, _ = h.AppendText(buf[:0]) }); a != 0 {
		t.Fatalf("AppendText allocates %.1f times per call", a)
	}
}

// TestAppendTextRetainsOneEncoder: however many goroutines encode, on
// however many CPUs, the encoder state a process keeps after its first
// encode is fixed — one zlib compressor (1.2 MB). With a sync.Pool it was
// one per P that ever encoded, created whenever the encoding goroutine
// ran on a new P: in an agent that happened after the live-heap baseline
// taken at an endpoint's start, and the fanout suite read 2.4 MB of
// encoders as heap growth (flow1-sub0 1.0 → 3.3 MiB, bound 1 MiB).
func TestAppendTextRetainsOneEncoder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	h := sampleHistograms()["wide"]
	if _, err := h.AppendText(nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	base := heapLive()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64<<10)
			<-start
			for range 20 {
				if _, err := h.AppendText(buf[:0]); err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	close(start)
	wg.Wait()
	runtime.GC()
	if grew := heapLive() - base; grew > 512<<10 {
		t.Fatalf("live heap grew by %d bytes after concurrent encodes: encoder state kept per P, not once per process", grew)
	}
}

// BenchmarkEncode compares the reused encoder with hdrhistogram-go's
// Encode (the baseline) on a 250-sample window histogram; compare the
// ns/op and B/op of the two sub-benchmarks.
func BenchmarkEncode(b *testing.B) {
	h := sampleHistograms()["window of 250"]
	b.Run("hdrhistogram-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = report.LibraryEncodeForTest(h)
		}
	})
	b.Run("AppendText", func(b *testing.B) {
		buf := make([]byte, 0, 64<<10)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h.AppendText(buf[:0])
		}
	})
}

// heapLive is the Go heap's live bytes as of the last GC, the reading
// hostinfo.GoHeapLive makes (report reads no host or process state itself).
func heapLive() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
