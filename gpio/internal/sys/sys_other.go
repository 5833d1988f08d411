//go:build !linux

package sys

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// errNotLinux is returned off Linux by everything the simulated chip needs
// from the kernel (MAP_SHARED|MAP_POPULATE, futex(2)). It matches
// errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("gpio: simulated chip needs Linux (shared memory, futex): %w", errors.ErrUnsupported)

// MonotonicNs returns the runtime's monotonic clock in nanoseconds (on
// Linux it is CLOCK_MONOTONIC). No system call, no allocation.
func MonotonicNs() int64 { return monoclock.Now() }

// RealtimeNs returns the wall clock in nanoseconds since the Unix epoch.
func RealtimeNs() int64 { return time.Now().UnixNano() }

// Map fails off Linux with an error matching errors.ErrUnsupported.
func Map(f *os.File, size int) ([]byte, error) { return nil, errNotLinux }

// Unmap fails off Linux, where Map never succeeds.
func Unmap(b []byte) error { return errNotLinux }

// FutexWait returns at once off Linux; callers re-check their condition.
// Never reached: Map fails first.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) {}

// FutexWake does nothing off Linux.
func FutexWake(addr *uint32) {}

// ProcessAlive reports only the calling process as alive off Linux.
func ProcessAlive(pid int) bool { return pid > 0 && pid == os.Getpid() }

// FileGid fails off Linux with an error matching errors.ErrUnsupported.
func FileGid(path string) (int, error) { return 0, errNotLinux }

// SetNonblock fails off Linux with an error matching errors.ErrUnsupported.
func SetNonblock(fd int) error { return errNotLinux }

// Close fails off Linux, where no raw descriptor is ever opened here.
func Close(fd int) error { return errNotLinux }
