package faultkit

import "syscall"

// helperProcAttr makes a helper the leader of its own process group (Close
// kills the group) and has the kernel SIGKILL it if the test binary dies.
func helperProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
