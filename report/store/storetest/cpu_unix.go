//go:build unix

package storetest

import (
	"syscall"
	"time"
)

// cpuTime is this process's user+system CPU time: on a loaded machine
// wall time measures the neighbours, CPU time the query (for SQLite, which
// runs in-process; PostgreSQL's server time is not in it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
