//go:build !linux

package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/report"
)

// errNotLinux is WakeupFloor's error off Linux (no clock_nanosleep with
// TIMER_ABSTIME on CLOCK_MONOTONIC). It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("steps: wake-up floor needs Linux (clock_nanosleep): %w", errors.ErrUnsupported)

// WakeupFloor fails off Linux with an error matching errors.ErrUnsupported.
func WakeupFloor(ctx context.Context, period time.Duration, n int) (*report.Histogram, error) {
	return nil, errNotLinux
}
