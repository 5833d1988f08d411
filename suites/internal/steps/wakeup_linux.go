//go:build linux

package steps

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/report"
)

// WakeupFloor measures timer wake-up latency the way cyclictest does: a
// thread locked to its OS thread sleeps with clock_nanosleep(CLOCK_MONOTONIC,
// TIMER_ABSTIME) until the next period boundary and records how late it
// woke (woken − requested), n times. No middleware is involved: this is
// the floor no message latency on this host can beat. It runs on the
// controller's host (local and netns boards share it). Blocks about
// n × period; ctx cancels between samples.
func WakeupFloor(ctx context.Context, period time.Duration, n int) (*report.Histogram, error) {
	if period <= 0 || n <= 0 {
		return nil, fmt.Errorf("steps: wake-up floor: period %v, n %d: want both > 0", period, n)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := report.NewHistogram()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return nil, fmt.Errorf("steps: clock_gettime: %w", err)
	}
	next := now.Nano()
	for i := range n {
		if i%100 == 0 && ctx.Err() != nil {
			return h, ctx.Err()
		}
		next += int64(period)
		ts := unix.NsecToTimespec(next)
		for {
			err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
			if err == nil {
				break
			}
			if err != unix.EINTR {
				return h, fmt.Errorf("steps: clock_nanosleep: %w", err)
			}
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
			return h, fmt.Errorf("steps: clock_gettime: %w", err)
		}
		late := now.Nano() - next
		h.Record(late)
		if late > int64(period) { // overran: restart the grid from now
			next = now.Nano()
		}
	}
	return h, nil
}
