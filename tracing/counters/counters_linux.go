package counters

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Read samples process pid (0: the calling process): faults from
// /proc/PID/stat, context switches of tids (nil: every thread) from
// /proc/PID/task/TID/status, and — for the calling process only — the Go
// GC counters. A thread that has exited is skipped (its switches stop
// counting), so call it with the endpoint threads that live for the case.
func Read(pid int, tids []int) (Sample, error) {
	var s Sample
	self := pid == 0 || pid == os.Getpid()
	p := "self"
	if !self {
		p = strconv.Itoa(pid)
	}
	stat, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return s, fmt.Errorf("counters: %w", err)
	}
	// Fields after the ")" that closes comm: state is field 3, minflt 10,
	// majflt 12 (proc(5)).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("counters: /proc/%s/stat has no ')'", p)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 10 {
		return s, fmt.Errorf("counters: /proc/%s/stat has %d fields after comm", p, len(f))
	}
	if s.MinorFaults, err = strconv.ParseInt(f[10-3], 10, 64); err != nil {
		return s, fmt.Errorf("counters: /proc/%s/stat minflt: %w", p, err)
	}
	if s.MajorFaults, err = strconv.ParseInt(f[12-3], 10, 64); err != nil {
		return s, fmt.Errorf("counters: /proc/%s/stat majflt: %w", p, err)
	}
	if tids == nil {
		ents, err := os.ReadDir("/proc/" + p + "/task")
		if err != nil {
			return s, fmt.Errorf("counters: %w", err)
		}
		for _, e := range ents {
			if t, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, t)
			}
		}
	}
	for _, t := range tids {
		task := "/proc/" + p + "/task/" + strconv.Itoa(t)
		// schedstat: "on-CPU ns, run-queue wait ns, timeslices" (sched-stats.rst).
		if b, err := os.ReadFile(task + "/schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 2 {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					s.RunDelayNs += n
				}
			}
		}
		b, err := os.ReadFile(task + "/status")
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return s, fmt.Errorf("counters: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch {
			case k == "voluntary_ctxt_switches" && err == nil:
				s.Voluntary += n
			case k == "nonvoluntary_ctxt_switches" && err == nil:
				s.Involuntary += n
			}
		}
	}
	if self {
		readGC(&s)
	}
	return s, nil
}

// Mappings returns the /proc/PID/smaps entries (pid 0: the calling
// process) that overlap [start, end); start = end = 0 returns all.
func Mappings(pid int, start, end uint64) ([]Mapping, error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/smaps")
	if err != nil {
		return nil, fmt.Errorf("counters: %w", err)
	}
	var out []Mapping
	var cur *Mapping
	keep := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("counters: /proc/%s/smaps: bad range %q", p, f[0])
			}
			path := "[anon]"
			if len(f) >= 6 {
				path = strings.Join(f[5:], " ")
			}
			keep = (start == 0 && end == 0) || (a < end && z > start)
			if keep {
				out = append(out, Mapping{Start: a, End: z, Path: path})
				cur = &out[len(out)-1]
			}
			continue
		}
		if !keep {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue // VmFlags, THPeligible text, …
		}
		switch k {
		case "Size":
			cur.SizeKB = n
		case "Rss":
			cur.RssKB = n
		case "KernelPageSize":
			cur.KernelPageSizeKB = n
		case "MMUPageSize":
			cur.MMUPageSizeKB = n
		case "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped":
			cur.THPKB += n
		}
	}
	return out, sc.Err()
}

// readGC fills the GC fields for the calling process.
func readGC(s *Sample) {
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() == metrics.KindUint64 {
		s.GCCycles = ms[0].Value.Uint64()
	}
	if ms[1].Value.Kind() == metrics.KindFloat64Histogram {
		h := ms[1].Value.Float64Histogram()
		// The runtime may reuse the histogram's memory: copy.
		s.gcPauses = &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: append([]float64(nil), h.Buckets...)}
	}
}
