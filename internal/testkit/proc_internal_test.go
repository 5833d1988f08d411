package testkit

import (
	"os"
	"slices"
	"testing"
)

// PIDs lists this process when keep takes it, and only what keep takes.
func TestPIDsKeepsWhatKeepTakes(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	me := os.Getpid()
	seen := 0
	got := PIDs(t, func(pid int) bool { seen++; return pid == me })
	if !slices.Equal(got, []int{me}) {
		t.Fatalf("PIDs keeping only %d = %v", me, got)
	}
	if seen < 2 {
		t.Fatalf("keep asked about %d processes, want every one in /proc (at least init and this one)", seen)
	}
}
