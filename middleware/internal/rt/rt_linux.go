// Package rt holds the real-time syscalls of the middleware: CPU
// affinity, SCHED_FIFO, mlockall. It is a syscall leaf; callers add
// policy and context. (Endpoint liveness is not PID-based: PIDs mean
// nothing across PID namespaces; see internal/shm/lease.go.)
package rt

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrPermission is wrapped by every function here when the kernel says
// EPERM/EACCES, with a text that names the missing capability.
var ErrPermission = errors.New("permission denied")

func permErr(what, capability string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%s: %w: needs %s or root (%v)", what, ErrPermission, capability, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ThreadState is what SetThread changed, so Restore can undo it.
type ThreadState struct {
	affinity    unix.CPUSet
	hadAffinity bool
	attr        *unix.SchedAttr
}

// SetThread pins the calling OS thread to cpu (if cpu >= 0) and gives it
// SCHED_FIFO priority prio (if prio > 0). The caller must hold
// runtime.LockOSThread. It does not block.
func SetThread(cpu, prio int) (ThreadState, error) {
	var st ThreadState
	if cpu >= 0 {
		if err := unix.SchedGetaffinity(0, &st.affinity); err != nil {
			return st, fmt.Errorf("sched_getaffinity: %w", err)
		}
		st.hadAffinity = true
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return st, fmt.Errorf("pin thread to CPU %d: CPU not available to this process (%v)", cpu, err)
			}
			return st, permErr(fmt.Sprintf("pin thread to CPU %d", cpu), "CAP_SYS_NICE", err)
		}
	}
	if prio > 0 {
		if prio > 99 {
			st.Restore()
			return ThreadState{}, fmt.Errorf("SCHED_FIFO priority %d: out of range 1..99", prio)
		}
		old, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			st.Restore()
			return ThreadState{}, fmt.Errorf("sched_getattr: %w", err)
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			st.Restore()
			return ThreadState{}, permErr(fmt.Sprintf("SCHED_FIFO priority %d", prio), "CAP_SYS_NICE", err)
		}
		st.attr = old
	}
	return st, nil
}

// Restore undoes SetThread on the same (still locked) thread. Best effort:
// errors are ignored because the thread keeps working either way.
func (st ThreadState) Restore() {
	if st.attr != nil {
		a := *st.attr
		a.Size = unix.SizeofSchedAttr
		_ = unix.SchedSetAttr(0, &a, 0)
	}
	if st.hadAffinity {
		_ = unix.SchedSetaffinity(0, &st.affinity)
	}
}

// Mlockall locks current and future pages of the process in RAM.
func Mlockall() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		if errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("mlockall: %w: RLIMIT_MEMLOCK too small; needs CAP_IPC_LOCK or root, or a larger `ulimit -l` (%v)", ErrPermission, err)
		}
		return permErr("mlockall", "CAP_IPC_LOCK", err)
	}
	return nil
}

// Gettid returns the calling thread's id.
func Gettid() int { return unix.Gettid() }
