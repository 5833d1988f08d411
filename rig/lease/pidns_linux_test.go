package lease_test

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// pidNamespace starts a child as pid 1 of new PID and mount namespaces.
func pidNamespace() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS}
}

// mountOwnProc gives a child in a new PID namespace its own /proc (as
// `unshare --pid --fork --mount-proc` does), so its pids and start times
// are its namespace's, as in a container.
func mountOwnProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}
