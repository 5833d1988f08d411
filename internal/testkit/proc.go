package testkit

import (
	"os"
	"strconv"
	"testing"
)

// PIDs returns the processes listed in /proc, in /proc's order, for which
// keep returns true; keep reads what it needs of /proc/<pid>/ itself and
// returns false for a process that has gone meanwhile. It fails the test
// if /proc cannot be listed (no /proc: not Linux, or not mounted).
func PIDs(t testing.TB, keep func(pid int) bool) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if keep(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
