// Package futex wraps the Linux futex(2) wait/wake operations on a 32-bit
// word, which may live in a MAP_SHARED mapping (cross-process) or in
// ordinary memory. It is a syscall leaf: no policy, no allocation.
package futex

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	opWait = 0 // FUTEX_WAIT (shared: works across processes on MAP_SHARED memory)
	opWake = 1 // FUTEX_WAKE
)

// Wait sleeps while *addr == val, for at most timeout (<= 0 means no
// timeout). It returns nil when woken, when *addr != val on entry (EAGAIN),
// on a timeout and on a signal (EINTR): callers always re-check their
// condition. Other errors are returned as syscall.Errno. Blocks. 0 allocs.
func Wait(addr *uint32, val uint32, timeout time.Duration) error {
	return wait(addr, val, timeout, false)
}

// WaitHeld is Wait through a raw system call: the calling thread keeps
// its Go scheduler processor (P) while it sleeps, as a C thread blocked
// in futex(2) does, instead of handing it to the runtime and taking one
// back on every wake-up (entersyscall/exitsyscall, and the runtime's
// monitor thread retaking the P: measured 64-70 context switches per
// message on a 50 Hz 1 MiB shared-memory stream, 12-14 with WaitHeld;
// issue 37). The caller must have reserved the P with rt.HoldP, so one
// P is always left to the rest of the process. A garbage collection's
// stop-the-world is not held up: its preemption signal ends the sleep
// with EINTR. Same results as Wait. Blocks; 0 allocs.
func WaitHeld(addr *uint32, val uint32, timeout time.Duration) error {
	return wait(addr, val, timeout, true)
}

func wait(addr *uint32, val uint32, timeout time.Duration, held bool) error {
	var tsp uintptr
	var ts unix.Timespec
	if timeout > 0 {
		ts = unix.NsecToTimespec(int64(timeout))
		tsp = uintptr(unsafe.Pointer(&ts))
	}
	var e syscall.Errno
	if held {
		_, _, e = syscall.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), opWait, uintptr(val), tsp, 0, 0)
	} else {
		_, _, e = syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), opWait, uintptr(val), tsp, 0, 0)
	}
	switch e {
	case 0, unix.EAGAIN, unix.EINTR, unix.ETIMEDOUT:
		return nil
	}
	return e
}

// Wake wakes up to n waiters sleeping on addr and returns how many it woke.
// Does not block. 0 allocs.
func Wake(addr *uint32, n int) (int, error) {
	r, _, e := syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), opWake, uintptr(n), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Load is atomic.LoadUint32, here so callers of this leaf read the word the
// way they wait on it.
func Load(addr *uint32) uint32 { return atomic.LoadUint32(addr) }
