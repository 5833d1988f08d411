//go:build !linux

package rt

import (
	"errors"
	"fmt"
)

// ErrPermission is wrapped by every function here when the kernel says
// EPERM/EACCES, with a text that names the missing capability.
var ErrPermission = errors.New("permission denied")

// errNotLinux is returned off Linux, where the rig's real-time thread
// settings (sched_setaffinity, SCHED_FIFO, mlockall) are not
// available. It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("hilrig: CPU affinity, SCHED_FIFO, mlockall need Linux: %w", errors.ErrUnsupported)

// ThreadState is what SetThread changed, so Restore can undo it.
type ThreadState struct{}

// SetThread changes nothing off Linux: it fails with an error matching
// errors.ErrUnsupported when asked to pin (cpu >= 0) or raise priority
// (prio > 0), and succeeds when asked for neither.
func SetThread(cpu, prio int) (ThreadState, error) {
	if cpu >= 0 || prio > 0 {
		return ThreadState{}, errNotLinux
	}
	return ThreadState{}, nil
}

// Restore does nothing off Linux.
func (st ThreadState) Restore() {}

// Mlockall fails off Linux with an error matching errors.ErrUnsupported.
func Mlockall() error { return errNotLinux }

// Gettid returns 0 off Linux (no thread ids the rig can use).
func Gettid() int { return 0 }
