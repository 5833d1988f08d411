// Package counters reads the per-case process counters that explain
// tails: context switches of the endpoint threads, page faults, Go GC
// cycles and pauses (runtime/metrics), and the page size each
// shared-memory mapping actually got (/proc/PID/smaps).
//
// A case takes a Sample before and after and reports Delta. Every figure
// carries its method (Method* constants) for the report.
package counters

import (
	"math"
	"runtime/metrics"
	"strconv"
)

// Methods, printed next to the figures.
const (
	MethodCtx    = "/proc/PID/task/TID/status voluntary_ctxt_switches / nonvoluntary_ctxt_switches, summed over the endpoint threads"
	MethodFaults = "/proc/PID/stat minflt/majflt of the endpoint process"
	MethodGC     = "runtime/metrics /gc/cycles/total:gc-cycles and /sched/pauses/total/gc:seconds (histogram: total from bucket midpoints, max is the upper edge of the highest non-empty bucket)"
	MethodPages  = "/proc/PID/smaps KernelPageSize/MMUPageSize (hugetlb) and ShmemPmdMapped/AnonHugePages (transparent huge pages) of the mapping"
)

// Sample is a reading of the counters at one instant.
type Sample struct {
	Voluntary, Involuntary int64 // context switches, summed over the threads read
	MinorFaults            int64
	MajorFaults            int64
	// GC is set only for the calling process (runtime/metrics).
	GCCycles uint64
	gcPauses *metrics.Float64Histogram
}

// Counters is what happened between two samples.
type Counters struct {
	VoluntaryCtxSwitches   int64 `json:"voluntary_ctx_switches"`
	InvoluntaryCtxSwitches int64 `json:"involuntary_ctx_switches"`
	MinorFaults            int64 `json:"minor_faults"`
	MajorFaults            int64 `json:"major_faults"`
	GCCycles               int64 `json:"gc_cycles"`
	GCPauseTotalNs         int64 `json:"gc_pause_total_ns"`
	GCPauseMaxNs           int64 `json:"gc_pause_max_ns"` // upper bucket edge, see MethodGC
}

// Delta returns the counters from a (earlier) to b.
func Delta(a, b Sample) Counters {
	c := Counters{
		VoluntaryCtxSwitches:   b.Voluntary - a.Voluntary,
		InvoluntaryCtxSwitches: b.Involuntary - a.Involuntary,
		MinorFaults:            b.MinorFaults - a.MinorFaults,
		MajorFaults:            b.MajorFaults - a.MajorFaults,
		GCCycles:               int64(b.GCCycles - a.GCCycles),
	}
	if a.gcPauses == nil || b.gcPauses == nil || len(a.gcPauses.Counts) != len(b.gcPauses.Counts) {
		return c
	}
	bk := b.gcPauses.Buckets
	var total float64
	for i := range b.gcPauses.Counts {
		n := b.gcPauses.Counts[i] - a.gcPauses.Counts[i]
		if n == 0 {
			continue
		}
		lo, hi := bk[i], bk[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		total += float64(n) * (lo + hi) / 2
		c.GCPauseMaxNs = int64(hi * 1e9)
	}
	c.GCPauseTotalNs = int64(total * 1e9)
	return c
}

// Mapping is one /proc/PID/smaps entry with the page sizes it got.
type Mapping struct {
	Start, End uint64 `json:"-"`
	Path       string `json:"path"` // file, "[anon]" or e.g. "/anon_hugepage (deleted)"
	SizeKB     int64  `json:"size_kb"`
	RssKB      int64  `json:"rss_kb"`
	// KernelPageSizeKB / MMUPageSizeKB are the hugetlb page size (2048 for
	// 2 MiB pages) or the base page size (4 on x86-64).
	KernelPageSizeKB int64 `json:"kernel_page_size_kb"`
	MMUPageSizeKB    int64 `json:"mmu_page_size_kb"`
	// THPKB is memory mapped by transparent huge pages (AnonHugePages +
	// ShmemPmdMapped + FilePmdMapped).
	THPKB int64 `json:"thp_kb"`
}

// Huge says whether the mapping is (at least partly) backed by huge pages.
func (m Mapping) Huge() bool { return m.KernelPageSizeKB > 4 || m.THPKB > 0 }

// PageSizeWords says in words what pages the mapping got, e.g. "2 MiB
// hugetlb pages", "4 KiB pages (no huge pages: ...)".
func (m Mapping) PageSizeWords() string {
	switch {
	case m.KernelPageSizeKB > 4:
		return fmtKB(m.KernelPageSizeKB) + " hugetlb pages"
	case m.THPKB > 0:
		return fmtKB(m.THPKB) + " of " + fmtKB(m.RssKB) + " resident in transparent huge pages, rest " + fmtKB(m.KernelPageSizeKB) + " pages"
	}
	return fmtKB(m.KernelPageSizeKB) + " pages (no huge pages)"
}

func fmtKB(kb int64) string {
	switch {
	case kb >= 1024*1024 && kb%(1024*1024) == 0:
		return strconv.FormatInt(kb/(1024*1024), 10) + " GiB"
	case kb >= 1024 && kb%1024 == 0:
		return strconv.FormatInt(kb/1024, 10) + " MiB"
	}
	return strconv.FormatInt(kb, 10) + " KiB"
}
