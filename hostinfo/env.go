package hostinfo

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/report"
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
func CollectEnv() report.RunInfo { return CollectEnvFrom(EnvPaths{Proc: "/proc", Sys: "/sys"}) }

// CollectEnvFrom is CollectEnv with explicit roots.
func CollectEnvFrom(p EnvPaths) report.RunInfo {
	ri := report.RunInfo{GoVersion: runtime.Version(), NumCPU: runtime.NumCPU()}
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
