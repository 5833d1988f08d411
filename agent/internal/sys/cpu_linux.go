package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// CurrentCPU is the CPU the calling thread runs on (getcpu(2)), -1 if
// unknown. 0 allocs.
func CurrentCPU() int {
	var cpu, node uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
		return -1
	}
	return int(cpu)
}

// Gettid is the calling OS thread's id.
func Gettid() int { return unix.Gettid() }
