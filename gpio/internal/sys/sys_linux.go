//go:build linux

// Package sys is the only place in gpio/ (besides go-gpiocdev) that makes
// raw system calls: shared-memory mapping, futexes and the monotonic clock
// for the simulated chip.
package sys

import (
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// MonotonicNs returns CLOCK_MONOTONIC in nanoseconds. It is the same clock
// in every process of the machine (and the kernel's default GPIO event
// clock). It reads the vDSO through the runtime: no system call, no
// allocation.
func MonotonicNs() int64 { return monoclock.Now() }

// RealtimeNs returns CLOCK_REALTIME in nanoseconds since the Unix epoch.
func RealtimeNs() int64 { return time.Now().UnixNano() }

// Map maps size bytes of f shared and read-write, with the page tables
// populated up front (MAP_POPULATE) so the first edges written to a ring
// do not pay page faults on the marker's hot path.
func Map(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
}

// Unmap releases a mapping made by Map.
func Unmap(b []byte) error { return unix.Munmap(b) }

const (
	futexWait = 0 // FUTEX_WAIT without FUTEX_PRIVATE_FLAG: shared across processes
	futexWake = 1
)

// FutexWait blocks while *addr == val, at most timeout. It returns early on
// a wake, a signal or a changed value; callers re-check their condition.
// addr must point into a MAP_SHARED mapping for cross-process use.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) {
	ts := unix.NsecToTimespec(int64(timeout))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// FutexWake wakes every waiter on addr.
func FutexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(0x7fffffff), 0, 0, 0)
}

// ProcessAlive reports whether pid names a live process (any owner: a
// signal-0 probe that fails with EPERM still proves it exists).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// FileGid returns the group id owning path.
func FileGid(path string) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return int(st.Gid), nil
}

// SetNonblock puts fd in non-blocking mode so os.NewFile registers it with
// the runtime poller (read deadlines then work).
func SetNonblock(fd int) error { return unix.SetNonblock(fd, true) }

// Close closes a raw descriptor.
func Close(fd int) error { return unix.Close(fd) }
