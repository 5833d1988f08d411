package ptprig

import "syscall"

// daemonProcAttr puts a daemon in its own process group (so KillDaemon
// reaches ip-netns-exec's child too) and has the kernel SIGKILL it when
// the spawner thread dies (see spawner).
func daemonProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
