package lease

import "github.com/hilrig/hilrig/internal/procstat"

// procStart is field 22 of /proc/PID/stat (start time, clock ticks since
// boot), 0 when the process is gone, the file unreadable or the system
// not Linux.
func procStart(pid int) int64 {
	t, err := procstat.StartTicks(pid)
	if err != nil {
		return 0
	}
	return t
}
