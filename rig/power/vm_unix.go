//go:build unix

package power

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// alive: the process exists and is not a zombie (a killed QEMU stays a
// zombie until its rig reaps it, which it does at once).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	if i := strings.LastIndexByte(string(raw), ')'); i > 0 && i+2 < len(raw) {
		return raw[i+2] != 'Z'
	}
	return true
}
