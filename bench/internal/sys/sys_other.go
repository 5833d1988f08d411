//go:build !linux

package sys

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// errNotLinux is what every constructor returns off Linux: the benchmark
// measures Linux primitives (futex, sched_setaffinity, RUSAGE_THREAD,
// blocking sockets with SO_RCVTIMEO). It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("hilrig bench: needs Linux (futex, sched_setaffinity, getrusage): %w", errors.ErrUnsupported)

// Pinned is an OS thread locked to the calling goroutine.
type Pinned struct{}

// PinThread locks the calling goroutine to its OS thread; pinning it to a
// CPU (cpu >= 0) fails off Linux with an error matching
// errors.ErrUnsupported.
func PinThread(cpu int) (*Pinned, error) {
	if cpu >= 0 {
		return nil, errNotLinux
	}
	runtime.LockOSThread()
	return &Pinned{}, nil
}

// Release unlocks the thread.
func (p *Pinned) Release() { runtime.UnlockOSThread() }

// Yield gives the CPU to another goroutine (runtime.Gosched off Linux).
func Yield() { runtime.Gosched() }

// CurrentCPU returns -1 off Linux (unknown).
func CurrentCPU() int { return -1 }

// Futex is a 32-bit word; off Linux it cannot be waited on.
type Futex struct {
	addr *uint32
}

// NewFutex wraps the 4-byte-aligned word at p.
func NewFutex(p *uint32, timeout time.Duration) *Futex { return &Futex{addr: p} }

// Load reads the word (acquire).
func (f *Futex) Load() uint32 { return atomic.LoadUint32(f.addr) }

// Store writes the word (release) without waking anybody.
func (f *Futex) Store(v uint32) { atomic.StoreUint32(f.addr, v) }

// Wait fails off Linux with an error matching errors.ErrUnsupported.
func (f *Futex) Wait(old uint32) error { return errNotLinux }

// Wake fails off Linux with an error matching errors.ErrUnsupported.
func (f *Futex) Wake(n int) error { return errNotLinux }

// ShmFile fails off Linux with an error matching errors.ErrUnsupported.
func ShmFile(dir string, size int) (*os.File, error) { return nil, errNotLinux }

// Map fails off Linux with an error matching errors.ErrUnsupported.
func Map(f *os.File, size int) ([]byte, error) { return nil, errNotLinux }

// Unmap fails off Linux, where Map never succeeds.
func Unmap(b []byte) error { return errNotLinux }

// Rusage is the CPU time a process used so far.
type Rusage struct {
	User, System time.Duration
}

// Self fails off Linux with an error matching errors.ErrUnsupported.
func Self() (Rusage, error) { return Rusage{}, errNotLinux }

// Thread fails off Linux with an error matching errors.ErrUnsupported.
func Thread() (Rusage, error) { return Rusage{}, errNotLinux }

// CPU is User+System.
func (r Rusage) CPU() time.Duration { return r.User + r.System }

// Monotonic returns the runtime's monotonic clock in ns (on Linux it is
// CLOCK_MONOTONIC).
func Monotonic() int64 { return monoclock.Now() }

// SocketPair fails off Linux with an error matching errors.ErrUnsupported.
func SocketPair(rcvTimeout time.Duration) (a, b *os.File, err error) {
	return nil, nil, errNotLinux
}

// SetRecvTimeout fails off Linux with an error matching errors.ErrUnsupported.
func SetRecvTimeout(fd int, d time.Duration) error { return errNotLinux }

// UDPSocket is a blocking IPv4 UDP socket; off Linux none can be opened.
type UDPSocket struct{}

// ListenUDP fails off Linux with an error matching errors.ErrUnsupported.
func ListenUDP(ip [4]byte, port int, bufBytes int, rcvTimeout time.Duration) (*UDPSocket, error) {
	return nil, errNotLinux
}

// LocalPort fails off Linux.
func (s *UDPSocket) LocalPort() (int, error) { return 0, errNotLinux }

// Connect fails off Linux.
func (s *UDPSocket) Connect(ip [4]byte, port int) error { return errNotLinux }

// Read fails off Linux.
func (s *UDPSocket) Read(b []byte) (int, error) { return 0, errNotLinux }

// Write fails off Linux.
func (s *UDPSocket) Write(b []byte) (int, error) { return 0, errNotLinux }

// Close fails off Linux.
func (s *UDPSocket) Close() error { return errNotLinux }

// MaxSegs is the most datagrams WriteSegs sends in one call.
const MaxSegs = 64

// EnableGRO fails off Linux.
func (s *UDPSocket) EnableGRO() error { return errNotLinux }

// WriteSegs fails off Linux.
func (s *UDPSocket) WriteSegs(b []byte, seg int) (int, error) { return 0, errNotLinux }

// Read fails off Linux with an error matching errors.ErrUnsupported.
func Read(fd int, b []byte) (int, error) { return 0, errNotLinux }

// Write fails off Linux with an error matching errors.ErrUnsupported.
func Write(fd int, b []byte) (int, error) { return 0, errNotLinux }
