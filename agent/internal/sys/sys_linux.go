// Package sys holds the agent's few system calls: CPU pinning, SCHED_FIFO,
// resource usage and clocks. It is the only package of agent that
// imports golang.org/x/sys/unix.
package sys

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// PinThread pins the calling OS thread to cpu. The caller must have called
// runtime.LockOSThread.
func PinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// SetFIFO gives the calling OS thread SCHED_FIFO priority prio (needs
// CAP_SYS_NICE). The caller must have called runtime.LockOSThread.
func SetFIFO(prio int) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1 /* SCHED_FIFO */, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("SCHED_FIFO priority %d: %w", prio, err)
	}
	return nil
}

// Usage is the process's CPU time and peak RSS.
type Usage struct {
	UserNs, SysNs int64
	MaxRSSBytes   int64
}

// ProcessUsage reads getrusage(RUSAGE_SELF).
func ProcessUsage() Usage {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	return Usage{UserNs: ru.Utime.Nano(), SysNs: ru.Stime.Nano(), MaxRSSBytes: ru.Maxrss * 1024}
}

// Clock IDs.
const (
	ClockRealtime  = unix.CLOCK_REALTIME
	ClockMonotonic = unix.CLOCK_MONOTONIC
	ClockTAI       = unix.CLOCK_TAI
)

// Now reads clock id in ns. 0 allocs (vDSO).
func Now(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// Kernel is uname -r.
func Kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// SleepUntilMono sleeps the calling thread until CLOCK_MONOTONIC reaches
// deadline (ns; clock_nanosleep TIMER_ABSTIME, resumed after signals). It
// blocks only this thread: no runtime timer is involved, so the wake-up
// does not depend on another thread (another CPU) running the Go
// scheduler's timers. Returns at once when deadline has passed.
func SleepUntilMono(deadline int64) error {
	ts := unix.NsecToTimespec(deadline)
	for {
		switch err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err {
		case nil:
			return nil
		case unix.EINTR:
		default:
			return fmt.Errorf("clock_nanosleep: %w", err)
		}
	}
}
