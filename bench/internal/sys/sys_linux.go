// Package sys holds the Linux system calls the benchmark needs (futex,
// thread affinity, shared mappings, rusage, blocking sockets), so the
// benchmark code above it never imports x/sys/unix directly.
//
// Every function here that sits on a timed path (FutexWait, FutexWake,
// Read, Write) is allocation free.
package sys

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// futex(2) operations (linux/futex.h); shared, not FUTEX_PRIVATE_FLAG,
// because the word lives in a MAP_SHARED mapping used by two processes.
const (
	futexWait = 0
	futexWake = 1
)

// Pinned is an OS thread locked to the calling goroutine and bound to one CPU.
// Release restores the thread's previous CPU mask and unlocks it.
type Pinned struct {
	old    unix.CPUSet
	pinned bool
}

// PinThread locks the calling goroutine to its OS thread and, when cpu >= 0,
// restricts that thread to cpu (sched_setaffinity on the thread id). With
// cpu < 0 it only locks the thread. The caller must call Release on the same
// goroutine. Does not block.
func PinThread(cpu int) (*Pinned, error) {
	runtime.LockOSThread()
	p := &Pinned{}
	if cpu < 0 {
		return p, nil
	}
	if cpu >= runtime.NumCPU() {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("pin thread to CPU %d: this machine has CPUs 0..%d", cpu, runtime.NumCPU()-1)
	}
	if err := unix.SchedGetaffinity(0, &p.old); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("pin thread: sched_getaffinity: %w", err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("pin thread to CPU %d: sched_setaffinity: %w", cpu, err)
	}
	p.pinned = true
	return p, nil
}

// Release restores the previous CPU mask and unlocks the thread. If the mask
// cannot be restored the thread stays locked (it dies with the goroutine)
// so no other goroutine inherits the pinning.
func (p *Pinned) Release() {
	if p.pinned {
		if err := unix.SchedSetaffinity(0, &p.old); err != nil {
			return
		}
	}
	runtime.UnlockOSThread()
}

// Yield gives the CPU to another runnable thread (sched_yield). 0 allocs.
func Yield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// CurrentCPU returns the CPU the calling thread runs on (getcpu).
func CurrentCPU() int {
	var cpu, node uint32
	_, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0)
	if e != 0 {
		return -1
	}
	return int(cpu)
}

// Futex is a 32-bit futex word in memory shared between processes (a
// MAP_SHARED mapping) or between threads. It keeps its own timeout so
// FutexWait does not allocate.
type Futex struct {
	addr *uint32
	ts   unix.Timespec
}

// NewFutex wraps the 4-byte-aligned word at p. timeout bounds each wait so
// callers can poll a stop condition.
func NewFutex(p *uint32, timeout time.Duration) *Futex {
	return &Futex{addr: p, ts: unix.NsecToTimespec(timeout.Nanoseconds())}
}

// Load reads the word (acquire).
func (f *Futex) Load() uint32 { return atomic.LoadUint32(f.addr) }

// Store writes the word (release) without waking anybody.
func (f *Futex) Store(v uint32) { atomic.StoreUint32(f.addr, v) }

// Wait sleeps while the word equals old (FUTEX_WAIT, shared). It returns
// nil when woken or when the word already differs, ErrTimeout when the
// timeout elapsed. Spurious wake-ups return nil; callers re-check. Blocks.
func (f *Futex) Wait(old uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(f.addr)), futexWait,
		uintptr(old), uintptr(unsafe.Pointer(&f.ts)), 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EINTR:
		return nil
	case unix.ETIMEDOUT:
		return ErrTimeout
	default:
		return e
	}
}

// Wake wakes up to n waiters (FUTEX_WAKE, shared). Does not block.
func (f *Futex) Wake(n int) error {
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(f.addr)), futexWake,
		uintptr(n), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ShmFile creates a file of size bytes under dir (normally /dev/shm),
// unlinks it at once (nothing can leak, even on SIGKILL) and returns the
// open file, which can be handed to a child through exec.Cmd.ExtraFiles.
func ShmFile(dir string, size int) (*os.File, error) {
	f, err := os.CreateTemp(dir, "hilrig-bench-*")
	if err != nil {
		return nil, fmt.Errorf("create shared-memory file in %s: %w", dir, err)
	}
	name := f.Name()
	if err := os.Remove(name); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlink %s: %w", name, err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("size shared-memory file %s to %d bytes: %w", name, size, err)
	}
	return f, nil
}

// Map maps size bytes of f read-write and shared. Unmap with Unmap.
func Map(f *os.File, size int) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), size, err)
	}
	return b, nil
}

// Unmap undoes Map.
func Unmap(b []byte) error { return unix.Munmap(b) }

// Rusage is the CPU time a process used so far.
type Rusage struct {
	User, System time.Duration
}

// Self returns getrusage(RUSAGE_SELF).
func Self() (Rusage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Rusage{}, fmt.Errorf("getrusage: %w", err)
	}
	return Rusage{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano())}, nil
}

// Thread returns getrusage(RUSAGE_THREAD): the calling OS thread's CPU
// time (lock the goroutine to its thread around the measured span).
func Thread() (Rusage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return Rusage{}, fmt.Errorf("getrusage(thread): %w", err)
	}
	return Rusage{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano())}, nil
}

// CPU is User+System.
func (r Rusage) CPU() time.Duration { return r.User + r.System }

// Monotonic returns CLOCK_MONOTONIC in ns, comparable across processes of
// one host (unlike time.Time's hidden monotonic reading), through the vDSO.
func Monotonic() int64 { return monoclock.Now() }

// SocketPair returns a connected AF_UNIX SOCK_STREAM pair in blocking mode
// with receive timeout rcvTimeout.
func SocketPair(rcvTimeout time.Duration) (a, b *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	for _, fd := range fds {
		if err := SetRecvTimeout(fd, rcvTimeout); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, nil, err
		}
		setBuffers(fd, 4<<20)
	}
	return os.NewFile(uintptr(fds[0]), "uds-a"), os.NewFile(uintptr(fds[1]), "uds-b"), nil
}

// SetRecvTimeout sets SO_RCVTIMEO on fd.
func SetRecvTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("setsockopt SO_RCVTIMEO: %w", err)
	}
	return nil
}

// setBuffers raises the socket buffers: SO_*BUFFORCE as root, else the
// sysctl-capped SO_*BUF. Best effort: a small buffer only costs speed.
func setBuffers(fd, n int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, n)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, n)
	}
}

// UDPSocket is a blocking IPv4 UDP socket bound to a local address.
type UDPSocket struct {
	fd int
}

// ListenUDP opens a blocking UDP socket bound to ip:port (port 0 picks
// one), with buffers of bufBytes and receive timeout rcvTimeout.
func ListenUDP(ip [4]byte, port int, bufBytes int, rcvTimeout time.Duration) (*UDPSocket, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	setBuffers(fd, bufBytes)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: ip, Port: port}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind udp %d.%d.%d.%d:%d: %w", ip[0], ip[1], ip[2], ip[3], port, err)
	}
	if err := SetRecvTimeout(fd, rcvTimeout); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &UDPSocket{fd: fd}, nil
}

// LocalPort returns the bound port.
func (s *UDPSocket) LocalPort() (int, error) {
	sa, err := unix.Getsockname(s.fd)
	if err != nil {
		return 0, fmt.Errorf("getsockname: %w", err)
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return 0, fmt.Errorf("getsockname: not IPv4")
	}
	return in.Port, nil
}

// Connect fixes the peer so Read/Write need no address (and do not allocate).
func (s *UDPSocket) Connect(ip [4]byte, port int) error {
	if err := unix.Connect(s.fd, &unix.SockaddrInet4{Addr: ip, Port: port}); err != nil {
		return fmt.Errorf("connect udp %d.%d.%d.%d:%d: %w", ip[0], ip[1], ip[2], ip[3], port, err)
	}
	return nil
}

// Read receives one datagram into b. ErrTimeout after the receive timeout.
// Blocks.
func (s *UDPSocket) Read(b []byte) (int, error) { return Read(s.fd, b) }

// Write sends b as one datagram. Blocks while the send buffer is full.
func (s *UDPSocket) Write(b []byte) (int, error) { return Write(s.fd, b) }

// Close closes the socket.
func (s *UDPSocket) Close() error { return unix.Close(s.fd) }

// MaxSegs is the most datagrams WriteSegs sends in one call (the kernel's
// UDP_MAX_SEGMENTS on every kernel that has UDP_SEGMENT).
const MaxSegs = 64

// EnableGRO sets UDP_GRO (Linux 5.0): a run of datagrams that arrives
// still segmented (WriteSegs over lo or a veth) is read whole by one Read,
// its payloads joined in order. Read's buffer must then hold a whole run,
// or the rest of it is cut off. An error names the refused option.
func (s *UDPSocket) EnableGRO() error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
		return fmt.Errorf("setsockopt UDP_GRO: %w", err)
	}
	return nil
}

// WriteSegs sends b as datagrams of seg bytes each (the last may be
// shorter) in one sendmsg with a UDP_SEGMENT control message (Linux 4.18,
// UDP segmentation offload): the datagrams one Write each would send, in
// one system call. b holds at most MaxSegs datagrams and 65,507 bytes.
// Blocks while the send buffer is full; EINTR is retried. A kernel that
// refuses the offload fails the call with its errno (the bench reports
// that instead of measuring something else). 0 allocs.
func (s *UDPSocket) WriteSegs(b []byte, seg int) (int, error) {
	if seg <= 0 || len(b) == 0 || len(b) > 65507 || (len(b)+seg-1)/seg > MaxSegs {
		return 0, fmt.Errorf("udp WriteSegs: %d bytes in segments of %d (at most %d segments, 65507 bytes)", len(b), seg, MaxSegs)
	}
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	// One control message, SOL_UDP/UDP_SEGMENT with the segment size as a
	// u16; uint64s keep it aligned for the cmsghdr.
	var cm [4]uint64
	h := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Add(unsafe.Pointer(&cm[0]), unix.CmsgLen(0))) = uint16(seg)
	msg := unix.Msghdr{Iov: &iov, Control: (*byte)(unsafe.Pointer(&cm[0]))}
	msg.SetIovlen(1)
	msg.SetControllen(unix.CmsgSpace(2))
	for {
		n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), 0)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, fmt.Errorf("sendmsg UDP_SEGMENT (%d-byte segments): %w", seg, e)
	}
}

// Read is read(2) on a blocking fd; EAGAIN (SO_RCVTIMEO) maps to ErrTimeout
// and EINTR is retried. 0 allocs.
func Read(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if err == nil {
			return n, nil
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return 0, ErrTimeout
		}
		return 0, err
	}
}

// Write is write(2) on a blocking fd with EINTR retried. 0 allocs.
func Write(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Write(fd, b)
		if err != nil && err == unix.EINTR {
			continue
		}
		return n, err
	}
}
