// Package clk reads kernel clocks with clock_gettime(2). It is the only
// place in timesync that makes the raw syscall.
package clk

import (
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// Kernel clock ids.
const (
	Realtime  int32 = unix.CLOCK_REALTIME
	Monotonic int32 = unix.CLOCK_MONOTONIC
	TAI       int32 = unix.CLOCK_TAI
)

// Gettime returns the clock in nanoseconds since its epoch. 0 allocs; a
// real syscall (no vDSO), so ~10× slower than Nanotime.
func Gettime(id int32) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// Nanotime is CLOCK_MONOTONIC read through the vDSO by the Go runtime: the
// same value other processes on this host read from CLOCK_MONOTONIC, which
// is what single-host latency needs (time.Now's monotonic reading is
// relative to process start and useless across processes).
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64
