package udp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SocketConfig configures Open.
type SocketConfig struct {
	// Listen is the local address to bind ("0.0.0.0:0" for an ephemeral
	// port on all addresses of the current network namespace).
	Listen netip.AddrPort
	// Group, when valid, is a multicast group to join on Interface. The
	// socket then binds the group's port on 0.0.0.0 with SO_REUSEADDR.
	Group netip.AddrPort
	// Interface is the interface multicast is sent and received on; required
	// with Group, and used for IP_MULTICAST_IF when sending to groups.
	Interface string
	// RcvBuf/SndBuf are the requested SO_RCVBUF/SO_SNDBUF in bytes; 0
	// keeps the kernel default. When the kernel caps them (net.core.rmem_max,
	// net.core.wmem_max) SO_*BUFFORCE is tried and, failing that, a warning
	// is logged.
	RcvBuf, SndBuf int
	// BusyPoll sets SO_BUSY_POLL (µs granularity); 0 leaves it off.
	BusyPoll time.Duration
	// Timestamps enables SO_TIMESTAMPNS kernel receive timestamps.
	Timestamps bool
	// Logger receives socket-size warnings. nil discards.
	Logger *slog.Logger
}

// Socket is a UDP socket with the options of SocketConfig. ReadFrom must be
// called by one goroutine at a time (it owns the control-message buffer);
// WriteTo is safe concurrently.
type Socket struct {
	c     *net.UDPConn
	local netip.AddrPort
	oob   [128]byte
	// RcvBuf/SndBuf are the sizes the kernel granted (as getsockopt reports
	// them, i.e. doubled for bookkeeping).
	RcvBuf, SndBuf int
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
	s := &Socket{c: c, local: c.LocalAddr().(*net.UDPAddr).AddrPort()}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("udp: %s: %w", bind, err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) { serr = s.setup(int(fd), cfg, ifi, log) })
	if err = errors.Join(err, serr); err != nil {
		c.Close()
		return nil, fmt.Errorf("udp: socket %s: %w", s.local, err)
	}
	return s, nil
}

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

// WriteTo sends b to to. 0 allocs.
func (s *Socket) WriteTo(b []byte, to netip.AddrPort) error {
	_, err := s.c.WriteToUDPAddrPort(b, to)
	return err
}

// ReadFrom reads one datagram; see Conn. 0 allocs.
func (s *Socket) ReadFrom(b []byte) (int, netip.AddrPort, int64, error) {
	n, oobn, _, from, err := s.c.ReadMsgUDPAddrPort(b, s.oob[:])
	if err != nil {
		return 0, netip.AddrPort{}, 0, err
	}
	return n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), parseRxStamp(s.oob[:oobn]), nil
}

// parseRxStamp finds SCM_TIMESTAMPNS in control messages without
// allocating (unix.ParseSocketControlMessage allocates).
func parseRxStamp(oob []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && (h.Type == unix.SCM_TIMESTAMPNS) && l >= hdr+16 {
			d := oob[hdr:]
			sec := int64(binary.NativeEndian.Uint64(d[0:]))
			nsec := int64(binary.NativeEndian.Uint64(d[8:]))
			return sec*1e9 + nsec
		}
		a := cmsgAlign(l)
		if a >= len(oob) {
			return 0
		}
		oob = oob[a:]
	}
	return 0
}

func cmsgAlign(l int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (l + a - 1) &^ (a - 1)
}

// SetReadDeadline bounds ReadFrom.
func (s *Socket) SetReadDeadline(t time.Time) error { return s.c.SetReadDeadline(t) }

// LocalAddr is the bound address.
func (s *Socket) LocalAddr() netip.AddrPort { return s.local }

// Close closes the socket. Idempotent (a second call returns net.ErrClosed
// wrapped by the net package, which callers may ignore).
func (s *Socket) Close() error { return s.c.Close() }
