// Package rt holds the real-time and process-liveness syscalls of the
// middleware: CPU affinity, SCHED_FIFO, mlockall, and PID liveness with a
// start-time check against PID reuse. It is a syscall leaf; callers add
// policy and context.
package rt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

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

// StartTime returns the start time of process pid in clock ticks after
// boot (field 22 of /proc/<pid>/stat). Together with the PID it names a
// process uniquely: a reused PID has a later start time.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// comm (field 2) may contain spaces and parentheses: split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); starttime is field 22 → index 19.
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}

// Alive reports whether process pid exists and, if start != 0, is the
// same process that had that start time (not a reuse of the PID). A
// process of another user counts as alive (kill says EPERM). Zombies
// count as dead.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// No /proc (or another pid namespace): trust kill(2).
		return true
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		f := bytes.Fields(b[i+1:])
		if len(f) > 0 && (f[0][0] == 'Z' || f[0][0] == 'X') {
			return false
		}
	}
	if start == 0 {
		return true
	}
	st, err := StartTime(pid)
	return err != nil || st == start
}
