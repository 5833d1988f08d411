package udp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/middleware/internal/rt"
)

// Socket is a UDP socket with the options of SocketConfig. ReadFrom and
// ReadDirect must be called by one goroutine at a time (they own the
// control-message buffer); WriteTo and SetReadDeadline are safe
// concurrently.
//
// The descriptor is deliberately kept out of Go's netpoller (docs/udp.md,
// "Receive path"): a socket registered with the runtime's epoll wakes the
// thread parked in epoll_wait on every datagram received and on every send
// (write-space edge), even when no goroutine waits on it. On this VM each of
// those wake-ups costs as much as the message itself. All I/O is raw
// syscalls. The descriptor blocks, with a receive timeout (rcvSlice), but
// every call passes MSG_DONTWAIT except ReadDirect's blocking recvmsg;
// the other blocking waits are ppoll on the caller's thread, with an
// eventfd that Close (and a moved read deadline) signals. Close also
// shuts the socket down, which wakes a blocking recvmsg.
type Socket struct {
	fd    int
	cfd   int // eventfd, written once by Close: wakes every waiter for good
	kfd   int // eventfd, written by SetReadDeadline: wakes ReadFrom to recompute
	local netip.AddrPort
	oob   [128]byte
	d     directIO     // ReadDirect's state (one caller at a time)
	rdl   atomic.Int64 // read deadline, ns since the epoch (wall clock); 0 none
	// ops is held shared by every call that uses fd and exclusively by
	// Close, so the descriptor number is never closed (and reused) under a
	// call in progress.
	ops    sync.RWMutex
	closed atomic.Bool
	// noGSO is set once the kernel refused UDP_SEGMENT (at Open, or on a
	// send: no checksum offload on the route's device, SO_NO_CHECK):
	// WriteSegs then sends one datagram per call.
	noGSO atomic.Bool
	log   *slog.Logger
	// gro holds the datagrams of a coalesced read (UDP_GRO) still to be
	// returned; owned by the one reader, like oob.
	gro groStash
	// dedicated: SocketConfig.DedicatedWait.
	dedicated bool
	// RcvBuf/SndBuf are the sizes the kernel granted (as getsockopt reports
	// them, i.e. doubled for bookkeeping).
	RcvBuf, SndBuf int
	// peer is SocketConfig.Connect (set before any I/O, read-only after):
	// writes to it carry no address.
	peer netip.AddrPort
}

var _ Conn = (*Socket)(nil)

// Open creates the socket in the calling thread's network namespace.
func Open(cfg SocketConfig) (*Socket, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bind := cfg.Listen
	var ifi *net.Interface
	if cfg.Interface != "" {
		var err error
		if ifi, err = net.InterfaceByName(cfg.Interface); err != nil {
			return nil, fmt.Errorf("%w: interface %q: %v", ErrConfig, cfg.Interface, err)
		}
	}
	if cfg.Group.IsValid() {
		if !cfg.Group.Addr().Is4() || !cfg.Group.Addr().IsMulticast() {
			return nil, fmt.Errorf("%w: group %s is not an IPv4 multicast address", ErrConfig, cfg.Group)
		}
		if ifi == nil {
			return nil, fmt.Errorf("%w: group %s needs an interface (lo or a namespace veth)", ErrConfig, cfg.Group)
		}
		bind = netip.AddrPortFrom(netip.IPv4Unspecified(), cfg.Group.Port())
	}
	if !bind.IsValid() {
		bind = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if cfg.Group.IsValid() {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			}
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", bind.String())
	if err != nil {
		return nil, fmt.Errorf("udp: listen %s: %w", bind, err)
	}
	c := pc.(*net.UDPConn)
	local := c.LocalAddr().(*net.UDPAddr).AddrPort()
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("udp: %s: %w", bind, err)
	}
	s := &Socket{fd: -1, cfd: -1, kfd: -1, local: netip.AddrPortFrom(local.Addr().Unmap(), local.Port()), log: log, dedicated: cfg.DedicatedWait}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if serr = s.setup(int(fd), cfg, ifi, log); serr != nil {
			return
		}
		// Our own descriptor for the same socket. Closing the UDPConn below
		// removes its descriptor from the runtime's epoll set (EPOLL_CTL_DEL),
		// so nothing but our own ppoll ever waits on this socket.
		s.fd, serr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	c.Close()
	if err == nil && serr == nil && cfg.Connect.IsValid() {
		serr = s.connect(cfg.Connect)
	}
	if err = errors.Join(err, serr); err != nil {
		if s.fd >= 0 {
			unix.Close(s.fd)
		}
		return nil, fmt.Errorf("udp: socket %s: %w", s.local, err)
	}
	if s.cfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		s.kfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	}
	if err != nil {
		for _, fd := range []int{s.fd, s.cfd, s.kfd} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, fmt.Errorf("udp: socket %s: eventfd: %w", s.local, err)
	}
	s.d.fds[1] = unix.PollFd{Fd: int32(s.cfd), Events: unix.POLLIN}
	// The descriptor blocks (every other call passes MSG_DONTWAIT), with
	// a receive timeout, so ReadDirect's blocking read is one recvmsg.
	tv := unix.NsecToTimeval(int64(rcvSlice))
	if err = errors.Join(unix.SetNonblock(s.fd, false), unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)); err != nil {
		for _, fd := range []int{s.fd, s.cfd, s.kfd} {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("udp: socket %s: blocking receive: %w", s.local, err)
	}
	return s, nil
}

// connect connects the socket to peer and takes the source address the
// route chose as its local one.
func (s *Socket) connect(peer netip.AddrPort) error {
	if !peer.Addr().Is4() {
		return fmt.Errorf("%w: connect %s: want IPv4", ErrConfig, peer)
	}
	if err := unix.Connect(s.fd, &unix.SockaddrInet4{Port: int(peer.Port()), Addr: peer.Addr().As4()}); err != nil {
		return fmt.Errorf("connect %s: %w", peer, err)
	}
	if sa, err := unix.Getsockname(s.fd); err == nil {
		if in, ok := sa.(*unix.SockaddrInet4); ok {
			s.local = netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port))
		}
	}
	s.peer = peer
	return nil
}

// rcvSlice is the socket's receive timeout (SO_RCVTIMEO): the longest one
// blocking recvmsg of ReadDirect waits. ReadDirect blocks in recvmsg only
// when its caller may wait at least this long; shorter waits (a receive
// timer due sooner) use ppoll, whose timeout is exact where SO_RCVTIMEO
// counts in jiffies.
const rcvSlice = 10 * time.Millisecond

func (s *Socket) setup(fd int, cfg SocketConfig, ifi *net.Interface, log *slog.Logger) error {
	var err error
	if s.RcvBuf, err = sizeBuf(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, cfg.RcvBuf, "net.core.rmem_max", log); err != nil {
		return err
	}
	if s.SndBuf, err = sizeBuf(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, cfg.SndBuf, "net.core.wmem_max", log); err != nil {
		return err
	}
	if cfg.BusyPoll > 0 {
		us := int(cfg.BusyPoll / time.Microsecond)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, max(us, 1)); err != nil {
			return fmt.Errorf("SO_BUSY_POLL %d µs (needs CAP_NET_ADMIN above net.core.busy_poll): %w", us, err)
		}
	}
	if _, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT); err != nil {
		s.noGSO.Store(true) // before Linux 4.18
	}
	// Receive a run of segmented datagrams (a WriteSegs on this host, or
	// a NIC's UDP GRO) as one read; recvmsg splits it again. Before Linux
	// 5.0 the option is missing and each datagram is read on its own.
	if unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil {
		s.gro.buf = make([]byte, MaxDatagram+1)
	}
	if cfg.Timestamps {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
	}
	if ifi != nil {
		// Multicast leaves through the named interface only, never the
		// default route's; TTL 1 keeps it on the link; loop lets a
		// subscriber on the same host (or lo) hear it.
		mreq := &unix.IPMreqn{Ifindex: int32(ifi.Index)}
		if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, mreq); err != nil {
			return fmt.Errorf("IP_MULTICAST_IF %s: %w", ifi.Name, err)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, 1); err != nil {
			return fmt.Errorf("IP_MULTICAST_TTL: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 1); err != nil {
			return fmt.Errorf("IP_MULTICAST_LOOP: %w", err)
		}
	}
	if cfg.Group.IsValid() {
		mreq := &unix.IPMreqn{Multiaddr: cfg.Group.Addr().As4(), Ifindex: int32(ifi.Index)}
		if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
			return fmt.Errorf("join %s on %s: %w", cfg.Group.Addr(), ifi.Name, err)
		}
	}
	return nil
}

// sizeBuf sets a socket buffer size, falling back to the FORCE variant (root)
// and warning, naming the sysctl, when the kernel caps the size.
func sizeBuf(fd, opt, force, want int, sysctl string, log *slog.Logger) (int, error) {
	if want > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, want); err != nil {
			return 0, fmt.Errorf("setsockopt %d=%d: %w", opt, want, err)
		}
		if got, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt); got < want {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, want) // needs CAP_NET_ADMIN
		}
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt)
	if err != nil {
		return 0, fmt.Errorf("getsockopt %d: %w", opt, err)
	}
	// The kernel reports twice the usable size.
	if want > 0 && got < want {
		log.Warn("udp: socket buffer capped by the kernel; raise "+sysctl+" (sysctl -w "+sysctl+"=N) or run with CAP_NET_ADMIN",
			"sysctl", sysctl, "requested_bytes", want, "granted_bytes", got/2)
	}
	return got, nil
}

// WriteTo sends b to to. When the send buffer is full it waits (ppoll)
// for room, like a blocking socket. Safe concurrently. 0 allocs.
func (s *Socket) WriteTo(b []byte, to netip.AddrPort) error {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return net.ErrClosed
	}
	sa := sockaddr4(to)
	name, namelen := unsafe.Pointer(&sa), unsafe.Sizeof(sa)
	if to == s.peer {
		name, namelen = nil, 0 // connected: no route lookup
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for {
		// Non-blocking (MSG_DONTWAIT: the descriptor itself blocks, for
		// ReadDirect): the cheaper RawSyscall (no scheduler hand-off).
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(p), uintptr(len(b)), unix.MSG_DONTWAIT,
			uintptr(name), namelen)
		if again, err := s.afterSend(e, "sendto"); !again {
			return err
		}
	}
}

// Drops is how many datagrams the kernel dropped at this socket, almost
// always because its receive buffer was full (SO_MEMINFO,
// SK_MEMINFO_DROPS: a 32-bit count that wraps). 0 once closed or when the
// kernel does not say. One system call: for Stats, not a hot path. Safe
// concurrently.
func (s *Socket) Drops() uint64 {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return 0
	}
	var mi [unix.SK_MEMINFO_VARS]uint32
	n := uint32(unsafe.Sizeof(mi))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 || n <= unix.SK_MEMINFO_DROPS*4 {
		return 0
	}
	return uint64(mi[unix.SK_MEMINFO_DROPS])
}

// sockaddr4 is to as the kernel's sockaddr_in.
func sockaddr4(to netip.AddrPort) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: to.Addr().Unmap().As4()}
	pb := (*[2]byte)(unsafe.Pointer(&sa.Port))
	binary.BigEndian.PutUint16(pb[:], to.Port())
	return sa
}

// afterSend judges a non-blocking send's errno: done (again false, err
// nil), again after EINTR or once the send buffer has room (it waits,
// like a blocking socket), or the error naming call.
func (s *Socket) afterSend(e unix.Errno, call string) (again bool, err error) {
	switch e {
	case 0:
		return false, nil
	case unix.EINTR:
		return true, nil
	case unix.EAGAIN:
		if err := s.awaitWritable(); err != nil {
			return false, err
		}
		return true, nil
	default:
		return false, os.NewSyscallError(call, e)
	}
}

// WriteTo2 sends hdr ++ body as one datagram (sendmsg, two iovecs) with
// WriteTo's waiting and errors. Safe concurrently. 0 allocs.
func (s *Socket) WriteTo2(hdr, body []byte, to netip.AddrPort) error {
	if len(hdr) == 0 || len(body) == 0 {
		// An empty iovec base is not addressable: join them (tiny).
		return s.WriteTo(append(hdr[:len(hdr):len(hdr)], body...), to)
	}
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return net.ErrClosed
	}
	sa := sockaddr4(to)
	var iov [2]unix.Iovec
	iov[0].Base, iov[1].Base = &hdr[0], &body[0]
	iov[0].SetLen(len(hdr))
	iov[1].SetLen(len(body))
	msg := unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa)), Namelen: uint32(unsafe.Sizeof(sa)), Iov: &iov[0]}
	if to == s.peer {
		msg.Name, msg.Namelen = nil, 0
	}
	msg.SetIovlen(2)
	for {
		_, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
		if again, err := s.afterSend(e, "sendmsg"); !again {
			return err
		}
	}
}

// WriteSegs sends the len(bodies) datagrams hdrs[i*hlen:(i+1)*hlen] ++
// bodies[i] to `to`, in one sendmsg with UDP generic segmentation offload
// (UDP_SEGMENT): the kernel cuts the joined bytes into datagrams of
// hlen+len(bodies[0]) bytes, the last one possibly shorter. So every body
// but the last must be len(bodies[0]) bytes long and the last no longer;
// 1 ≤ len(bodies) ≤ MaxSegs; all together at most MaxDatagram bytes; hlen >
// 0 and no body empty. The receiver sees exactly the datagrams one
// WriteTo2 per body would have sent (the kernel segments before the wire,
// or on veth and lo just before the receiving socket), for about the cost
// of one. Segments above the route's MTU are IP-fragmented after
// segmentation, as single datagrams would be. When the kernel refuses GSO
// (too old, no checksum offload on the route's device) the datagrams go
// one sendmsg each, and every later call does the same. Waits for buffer room
// as WriteTo does. Safe concurrently. 0 allocs.
func (s *Socket) WriteSegs(hdrs []byte, hlen int, bodies [][]byte, to netip.AddrPort) error {
	if len(bodies) == 0 || len(bodies) > MaxSegs || hlen <= 0 || len(hdrs) < hlen*len(bodies) {
		return fmt.Errorf("udp: WriteSegs: %d datagrams (1..%d) with %d-byte headers in %d bytes", len(bodies), MaxSegs, hlen, len(hdrs))
	}
	if len(bodies) == 1 || s.noGSO.Load() {
		return s.writeEach(hdrs, hlen, bodies, to)
	}
	seg := hlen + len(bodies[0])
	s.ops.RLock()
	if s.closed.Load() {
		s.ops.RUnlock()
		return net.ErrClosed
	}
	sa := sockaddr4(to)
	var iov [2 * MaxSegs]unix.Iovec
	for i, b := range bodies {
		iov[2*i].Base, iov[2*i+1].Base = &hdrs[i*hlen], &b[0]
		iov[2*i].SetLen(hlen)
		iov[2*i+1].SetLen(len(b))
	}
	// One control message: SOL_UDP/UDP_SEGMENT, the segment size as a
	// u16. uint64s keep it aligned for the cmsghdr.
	var cm [4]uint64
	h := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Add(unsafe.Pointer(&cm[0]), unix.CmsgLen(0))) = uint16(seg)
	msg := unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa)), Namelen: uint32(unsafe.Sizeof(sa)), Iov: &iov[0],
		Control: (*byte)(unsafe.Pointer(&cm[0]))}
	if to == s.peer {
		msg.Name, msg.Namelen = nil, 0
	}
	msg.SetIovlen(2 * len(bodies))
	msg.SetControllen(unix.CmsgSpace(2))
	var e unix.Errno
	for {
		_, _, e = unix.RawSyscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
		again, err := s.afterSend(e, "sendmsg")
		if again {
			continue
		}
		if err == nil || !gsoRefused(e) {
			s.ops.RUnlock()
			return err
		}
		break
	}
	s.ops.RUnlock()
	if !s.noGSO.Swap(true) {
		s.log.Warn("udp: the kernel refused UDP segmentation offload; sending one datagram per call from now on",
			"socket", s.local, "peer", to, "segment_bytes", seg, "err", os.NewSyscallError("sendmsg UDP_SEGMENT", e))
	}
	return s.writeEach(hdrs, hlen, bodies, to)
}

// gsoRefused reports whether a UDP_SEGMENT send failed for the offload
// itself (the same datagrams sent one by one may pass), not the route.
func gsoRefused(e unix.Errno) bool {
	switch e {
	case unix.EIO, unix.EINVAL, unix.EMSGSIZE, unix.ENOPROTOOPT, unix.EOPNOTSUPP:
		return true
	}
	return false
}

// writeEach is WriteSegs one datagram per sendmsg; the first error ends it.
func (s *Socket) writeEach(hdrs []byte, hlen int, bodies [][]byte, to netip.AddrPort) error {
	for i, b := range bodies {
		if err := s.WriteTo2(hdrs[i*hlen:(i+1)*hlen], b, to); err != nil {
			return err
		}
	}
	return nil
}

// awaitWritable waits (ppoll, at most maxSleep) for room in the send
// buffer; net.ErrClosed after Close.
func (s *Socket) awaitWritable() error {
	fds := [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}, {Fd: int32(s.cfd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(maxSleep))
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if s.closed.Load() {
		return net.ErrClosed
	}
	if e != 0 && e != unix.EINTR {
		return os.NewSyscallError("ppoll", e)
	}
	return nil
}

// ReadFrom reads one datagram; see Conn. It blocks (ppoll on the caller's
// thread) until a datagram, the read deadline or Close. 0 allocs.
func (s *Socket) ReadFrom(b []byte) (int, netip.AddrPort, int64, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	fds := [3]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.cfd), Events: unix.POLLIN}, {Fd: int32(s.kfd), Events: unix.POLLIN}}
	var ts unix.Timespec
	for {
		if s.closed.Load() {
			return 0, netip.AddrPort{}, 0, net.ErrClosed
		}
		n, from, rx, err := s.recv(b)
		if err != errWouldBlock {
			return n, from, rx, err
		}
		tsp := uintptr(0) // no deadline: wait for a datagram or a signal
		if dl := s.rdl.Load(); dl != 0 {
			left := dl - time.Now().UnixNano()
			if left <= 0 {
				return 0, netip.AddrPort{}, 0, os.ErrDeadlineExceeded
			}
			ts = unix.NsecToTimespec(left)
			tsp = uintptr(unsafe.Pointer(&ts))
		}
		fds[0].Revents, fds[1].Revents, fds[2].Revents = 0, 0, 0
		_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 3, tsp, 0, 0, 0)
		if e != 0 && e != unix.EINTR {
			return 0, netip.AddrPort{}, 0, os.NewSyscallError("ppoll", e)
		}
		if fds[2].Revents != 0 {
			var buf [8]byte
			_, _ = unix.Read(s.kfd, buf[:]) // re-arm: the deadline moved
		}
	}
}

// recv is one non-blocking recvmsg into b (s.oob for control messages);
// errWouldBlock when the socket is empty.
func (s *Socket) recv(b []byte) (int, netip.AddrPort, int64, error) {
	return s.recvmsg(b, false)
}

// recvmsg is one recvmsg into b: non-blocking, or (block) a blocking one
// that waits up to the socket's receive timeout (rcvSlice; errWouldBlock
// then, as when a signal interrupts it) or until Close shuts the socket
// down (net.ErrClosed).
func (s *Socket) recvmsg(b []byte, block bool) (int, netip.AddrPort, int64, error) {
	d := &s.d
	if len(b) == 0 {
		return 0, netip.AddrPort{}, 0, errWouldBlock
	}
	g := &s.gro
	if g.off < g.n {
		n, from, rx := g.next(b)
		return n, from, rx, nil
	}
	// A coalesced read needs room for a whole run: a short buffer
	// reads into the stash and gets its first datagram from there.
	into, stashed := b, false
	if g.buf != nil && len(b) < MaxDatagram {
		into, stashed = g.buf, true
	}
	for {
		d.iov.Base = &into[0]
		d.iov.SetLen(len(into))
		d.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&d.rsa)), Namelen: uint32(unsafe.Sizeof(d.rsa)), Iov: &d.iov, Control: &s.oob[0]}
		d.msg.SetIovlen(1)
		d.msg.SetControllen(len(s.oob))
		var (
			n uintptr
			e unix.Errno
		)
		if block {
			if s.dedicated && rt.HoldP() {
				// Keeping the P (SocketConfig.DedicatedWait).
				n, _, e = unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&d.msg)), 0)
				rt.ReleaseP()
			} else {
				// Syscall lets the runtime hand this thread's P on.
				n, _, e = unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&d.msg)), 0)
			}
			if s.closed.Load() {
				d.iov.Base = nil
				return 0, netip.AddrPort{}, 0, net.ErrClosed
			}
			if e == unix.EINTR {
				e = unix.EAGAIN // the caller's loop recomputes its wait
			}
		} else {
			// Non-blocking, so the cheaper RawSyscall is safe.
			n, _, e = unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&d.msg)), unix.MSG_DONTWAIT)
		}
		switch e {
		case 0:
			var from netip.AddrPort
			if d.rsa.Addr.Family == unix.AF_INET {
				sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&d.rsa))
				pb := (*[2]byte)(unsafe.Pointer(&sa.Port))
				from = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), binary.BigEndian.Uint16(pb[:]))
			}
			d.iov.Base = nil
			rx, seg := parseCmsgs(s.oob[:min(int(d.msg.Controllen), len(s.oob))])
			if seg <= 0 || seg >= int(n) {
				seg = int(n) // one datagram
			}
			if !stashed {
				if seg < int(n) { // keep what follows the first
					g.off, g.n = 0, copy(g.buf, b[seg:n])
					g.seg, g.from, g.rx = seg, from, rx
				}
				return seg, from, rx, nil
			}
			g.off, g.n, g.seg, g.from, g.rx = 0, int(n), seg, from, rx
			c, _, _ := g.next(b)
			return c, from, rx, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			d.iov.Base = nil
			return 0, netip.AddrPort{}, 0, errWouldBlock
		default:
			d.iov.Base = nil
			return 0, netip.AddrPort{}, 0, os.NewSyscallError("recvmsg", e)
		}
	}
}

// errWouldBlock is ReadDirect's "nothing arrived within wait". Internal:
// never returned by an exported call.
var errWouldBlock = errors.New("udp: no datagram")

// directIO holds the raw syscalls' arguments in the Socket, so they are
// stable, heap-resident and nothing allocates per call.
type directIO struct {
	rsa unix.RawSockaddrAny
	iov unix.Iovec
	msg unix.Msghdr
	fds [2]unix.PollFd // the socket, Close's eventfd
	ts  unix.Timespec
}

// ReadDirect reads one datagram on the calling thread: a blocking recvmsg
// (in slices of rcvSlice) when wait is at least rcvSlice; otherwise, or
// for what is left of wait below rcvSlice, recvmsg and, when nothing is
// queued and wait > 0, one ppoll followed by one more recvmsg. It
// returns errWouldBlock when nothing arrived within wait, and
// net.ErrClosed after Close (which wakes the ppoll at once). The receive
// path of a subscriber waiting in Next uses it, so that the kernel wakes
// the waiting thread itself: no netpoller thread, no goroutine hand-off,
// no second thread wake-up per message (see docs/udp.md, "Receive path").
// One caller at a time, never concurrently with ReadFrom (the Receiver's
// lock guarantees it). Blocks up to wait. 0 allocs.
func (s *Socket) ReadDirect(b []byte, wait time.Duration) (int, netip.AddrPort, int64, error) {
	if s.closed.Load() {
		return 0, netip.AddrPort{}, 0, net.ErrClosed
	}
	if g := &s.gro; g.off < g.n {
		// The rest of a coalesced read: the stash is the one reader's
		// own (no fd, so no ops lock: its two atomic read-modify-writes
		// per datagram were 5 % of a 1 MiB round trip's CPU), no clock
		// read, no system call.
		n, from, rx := g.next(b)
		return n, from, rx, nil
	}
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return 0, netip.AddrPort{}, 0, net.ErrClosed
	}
	if wait >= rcvSlice {
		// Blocking recvmsg: the datagram wakes this thread inside the
		// call that returns it (what a plain blocking socket does),
		// instead of recvmsg, ppoll, recvmsg. Each call returns after at
		// most rcvSlice; what is left of wait below that goes to ppoll.
		end := time.Now().Add(wait)
		for {
			n, from, rx, err := s.recvmsg(b, true)
			if err != errWouldBlock {
				return n, from, rx, err
			}
			if wait = time.Until(end); wait < rcvSlice {
				break
			}
		}
		if wait <= 0 {
			return 0, netip.AddrPort{}, 0, errWouldBlock
		}
	}
	n, from, rx, err := s.recv(b)
	if err != errWouldBlock || wait <= 0 {
		return n, from, rx, err
	}
	d := &s.d
	d.fds[0] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	d.fds[1].Revents = 0
	d.ts = unix.NsecToTimespec(int64(wait))
	// Blocking: Syscall6 lets the runtime hand this thread's P on.
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&d.fds[0])), 2, uintptr(unsafe.Pointer(&d.ts)), 0, 0, 0)
	if s.closed.Load() {
		return 0, netip.AddrPort{}, 0, net.ErrClosed
	}
	if e != 0 && e != unix.EINTR {
		return 0, netip.AddrPort{}, 0, os.NewSyscallError("ppoll", e)
	}
	if d.fds[0].Revents == 0 {
		return 0, netip.AddrPort{}, 0, errWouldBlock
	}
	return s.recv(b)
}

// groStash is what is left of a coalesced read: n bytes from buf[off:],
// cut every seg bytes (the last datagram possibly shorter), all from one
// source with one receive stamp.
type groStash struct {
	buf         []byte // nil: UDP_GRO is off
	off, n, seg int
	from        netip.AddrPort
	rx          int64
}

// next copies the stash's next datagram into b (truncated to len(b), as
// recvmsg truncates) and returns its length in b.
func (g *groStash) next(b []byte) (int, netip.AddrPort, int64) {
	k := min(g.seg, g.n-g.off)
	c := copy(b, g.buf[g.off:g.off+k])
	g.off += k
	return c, g.from, g.rx
}

// parseCmsgs finds SCM_TIMESTAMPNS (rx, ns since the epoch; 0 if none)
// and UDP_GRO (seg, the size the datagrams of a coalesced read were cut
// at; 0 if none) in control messages without allocating
// (unix.ParseSocketControlMessage allocates). A malformed list ends the
// walk with what was found so far.
func parseCmsgs(oob []byte) (rx int64, seg int) {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return rx, seg
		}
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hdr+16:
			d := oob[hdr:]
			sec := int64(binary.NativeEndian.Uint64(d[0:]))
			nsec := int64(binary.NativeEndian.Uint64(d[8:]))
			rx = sec*1e9 + nsec
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= hdr+4:
			seg = int(int32(binary.NativeEndian.Uint32(oob[hdr:])))
		}
		a := cmsgAlign(l)
		if a >= len(oob) {
			return rx, seg
		}
		oob = oob[a:]
	}
	return rx, seg
}

func cmsgAlign(l int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (l + a - 1) &^ (a - 1)
}

// SetReadDeadline bounds ReadFrom (the zero time: no deadline). A reader
// blocked in ReadFrom recomputes its wait at once. Safe concurrently.
func (s *Socket) SetReadDeadline(t time.Time) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	var dl int64
	if !t.IsZero() {
		dl = max(t.UnixNano(), 1)
	}
	if s.rdl.Swap(dl) == dl {
		return nil
	}
	s.ops.RLock()
	defer s.ops.RUnlock()
	if s.closed.Load() {
		return net.ErrClosed
	}
	one := [8]byte{1}
	_, _ = unix.Write(s.kfd, one[:]) // native-endian 1 on little-endian hosts; any non-zero value wakes
	return nil
}

// LocalAddr is the bound address.
func (s *Socket) LocalAddr() netip.AddrPort { return s.local }

// Close closes the socket: blocked ReadFrom/ReadDirect/WriteTo calls return
// net.ErrClosed at once, and Close returns when they have. Idempotent (a
// second call returns net.ErrClosed, which callers may ignore).
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return net.ErrClosed
	}
	one := [8]byte{1}
	_, _ = unix.Write(s.cfd, one[:])
	// Wakes a blocking recvmsg (ReadDirect): it returns 0 and sees
	// closed. On an unconnected UDP socket shutdown fails with ENOTCONN
	// but marks the socket shut down and wakes its waiters all the same.
	_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
	s.ops.Lock() // every call in progress has seen closed and returned
	defer s.ops.Unlock()
	return errors.Join(unix.Close(s.fd), unix.Close(s.cfd), unix.Close(s.kfd))
}
