package hostinfo

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// ProcessRSS is the calling process's resident set in bytes, read from
// /proc/self/statm (0 when unreadable). Agents put it in every window and
// soak controllers in theirs, so both use this one reading. Does not block
// beyond one procfs read; safe for concurrent use.
func ProcessRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// GoHeapLive is the Go heap's live bytes as of the most recent garbage
// collection (runtime/metrics "/gc/heap/live:bytes"; 0 before the first
// GC). Unlike the resident set it does not swing with the GC's pacing or
// the scavenger, so growth between two readings is memory the program
// still references: the leak signal for short runs. Cheap (no stop the
// world, no allocation); safe for concurrent use.
func GoHeapLive() int64 { return readUint64Metric(0) }

// GoHeapAllocs is the total of bytes the Go heap has allocated since the
// process started (runtime/metrics "/gc/heap/allocs:bytes"), cumulative
// and never decreasing: the difference between two readings divided by
// the messages handled in between is the allocation per message, which
// must be 0 on a hot path. Same cost and safety as GoHeapLive.
func GoHeapAllocs() int64 { return readUint64Metric(1) }

var goMetricNames = [...]string{"/gc/heap/live:bytes", "/gc/heap/allocs:bytes"}

func readUint64Metric(i int) int64 {
	s := goMetricPool.Get().(*[1]metrics.Sample)
	defer goMetricPool.Put(s)
	s[0].Name = goMetricNames[i]
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

var goMetricPool = sync.Pool{New: func() any { return new([1]metrics.Sample) }}
