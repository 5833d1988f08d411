//go:build !linux

package clk

import (
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// Kernel clock ids, with their Linux values so recorded ids mean the same.
const (
	Realtime  int32 = 0
	Monotonic int32 = 1
	TAI       int32 = 11
)

// errNotLinux is Gettime's error off Linux for clocks other than Realtime
// and Monotonic (CLOCK_TAI, PHC clock ids). It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("timesync: clock_gettime of this clock needs Linux: %w", errors.ErrUnsupported)

// Gettime returns the clock in nanoseconds since its epoch. Off Linux only
// Realtime (time.Now) and Monotonic (the runtime's monotonic clock,
// monoclock.Now) are served; other ids fail with an error matching
// errors.ErrUnsupported.
func Gettime(id int32) (int64, error) {
	switch id {
	case Realtime:
		return time.Now().UnixNano(), nil
	case Monotonic:
		return monoclock.Now(), nil
	}
	return 0, fmt.Errorf("clock id %d: %w", id, errNotLinux)
}
