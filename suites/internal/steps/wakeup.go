package steps

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hilrig/hilrig/hostinfo"
)

// HostInfo reads the controller host's CPU governor(s) and online CPUs
// (the values a local or netns board sees).
func HostInfo() (governor, online string) {
	ri := hostinfo.CollectEnv()
	return ri.CPUGovernor, ri.OnlineCPUs
}

// LineHolders lists the processes holding a GPIO character device open
// (by /proc/*/fd), for "marker lines free" on real chips: a chip path
// held by a process that is not ours may hold our lines. Empty when none.
func LineHolders(chip string) []string {
	dev := chip
	if !strings.HasPrefix(dev, "/") {
		dev = "/dev/" + chip
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	seen := map[string]bool{}
	var out []string
	self := fmt.Sprintf("/proc/%d/", os.Getpid())
	for _, fd := range fds {
		if strings.HasPrefix(fd, self) {
			continue
		}
		if t, err := os.Readlink(fd); err == nil && t == dev {
			pid := strings.Split(fd, "/")[2]
			if !seen[pid] {
				seen[pid] = true
				comm, _ := os.ReadFile("/proc/" + pid + "/comm")
				out = append(out, pid+" ("+strings.TrimSpace(string(comm))+")")
			}
		}
	}
	return out
}
