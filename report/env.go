package report

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// EnvPaths are the roots CollectEnv reads; tests point them at a fake tree.
type EnvPaths struct {
	Proc string // "/proc"
	Sys  string // "/sys"
}

// CollectEnv reads the machine's environment from /proc and /sys: hostname,
// kernel release, CPU model, frequency governor(s), online CPUs, memory, and
// the Go version. It never touches the network, never fails (unreadable
// fields stay empty) and does not block beyond small file reads. Rack,
// GitRevision, Version, Config and times are the caller's to fill.
func CollectEnv() RunInfo { return CollectEnvFrom(EnvPaths{Proc: "/proc", Sys: "/sys"}) }

// CollectEnvFrom is CollectEnv with explicit roots.
func CollectEnvFrom(p EnvPaths) RunInfo {
	ri := RunInfo{GoVersion: runtime.Version(), NumCPU: runtime.NumCPU()}
	ri.Machine = readTrim(filepath.Join(p.Proc, "sys/kernel/hostname"))
	if ri.Machine == "" {
		ri.Machine, _ = os.Hostname()
	}
	ri.Kernel = readTrim(filepath.Join(p.Proc, "sys/kernel/osrelease"))
	if v := readTrim(filepath.Join(p.Proc, "sys/kernel/version")); v != "" && ri.Kernel != "" {
		ri.Kernel += " " + v
	}
	ri.CPUModel = cpuModel(filepath.Join(p.Proc, "cpuinfo"))
	ri.OnlineCPUs = readTrim(filepath.Join(p.Sys, "devices/system/cpu/online"))
	ri.CPUGovernor = governors(filepath.Join(p.Sys, "devices/system/cpu"))
	ri.MemTotal = memTotal(filepath.Join(p.Proc, "meminfo"))
	ri.Tuning = CollectTuning(p)
	return ri
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cpuModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "Hardware", "cpu model":
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// governors returns the distinct scaling governors of all CPUs, sorted and
// comma-joined ("performance" on a well-set-up rack); "" if cpufreq is absent
// (VMs), which the report shows as "n/a".
func governors(cpuDir string) string {
	matches, _ := filepath.Glob(filepath.Join(cpuDir, "cpu[0-9]*", "cpufreq", "scaling_governor"))
	set := map[string]bool{}
	for _, m := range matches {
		if g := readTrim(m); g != "" {
			set[g] = true
		}
	}
	out := make([]string, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// GitRevision returns the revision of the working tree containing dir, read
// from .git without running git: "<sha>" from HEAD (following a symbolic ref
// through refs/ or packed-refs). Without a .git it falls back to the binary's
// build info (vcs.revision, "-dirty" when vcs.modified). "" if unknown.
func GitRevision(dir string) string {
	for d := dir; d != ""; {
		gitDir := filepath.Join(d, ".git")
		if st, err := os.Stat(gitDir); err == nil {
			if !st.IsDir() { // worktree: "gitdir: <path>"
				if g, ok := strings.CutPrefix(readTrim(gitDir), "gitdir: "); ok {
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					gitDir = g
				}
			}
			if rev := headRevision(gitDir); rev != "" {
				return rev
			}
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, mod string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				mod = s.Value
			}
		}
		if rev != "" && mod == "true" {
			rev += "-dirty"
		}
		return rev
	}
	return ""
}

func headRevision(gitDir string) string {
	head := readTrim(filepath.Join(gitDir, "HEAD"))
	ref, ok := strings.CutPrefix(head, "ref: ")
	if !ok {
		return head // detached
	}
	// A worktree's refs live in the common dir.
	common := gitDir
	if c := readTrim(filepath.Join(gitDir, "commondir")); c != "" {
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	for _, g := range []string{gitDir, common} {
		if v := readTrim(filepath.Join(g, ref)); v != "" {
			return v
		}
	}
	b, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok && name == ref {
			return sha
		}
	}
	return ""
}

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
