package procgroup

import (
	"errors"
	"syscall"
)

// Attr makes the child the leader of a new process group whose id is its
// pid; set it as exec.Cmd.SysProcAttr before Start.
func Attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Kill SIGKILLs every process of the group led by pid (started with
// Attr). A group already gone is not an error. The kernel does not hand
// out the group's id as a new pid while any member lives, even after the
// leader was reaped, so a caller that knows a member still lives (it
// holds the leader's output pipe open) may call it after Wait to kill
// what the leader left behind.
func Kill(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
