package lease

import (
	"strconv"

	"github.com/hilrig/hilrig/internal/procstat"
)

// procStart is field 22 of /proc/PID/stat (start time, clock ticks since
// boot) as text, "" when the process is gone, the file unreadable or the
// system not Linux.
func procStart(pid int) string {
	t, err := procstat.StartTicks(pid)
	if err != nil {
		return ""
	}
	return strconv.FormatInt(t, 10)
}
