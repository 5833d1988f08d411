//go:build !linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// errNotLinux is what Open returns off Linux: the socket is raw syscalls
// (recvmsg, ppoll, eventfd, SO_TIMESTAMPNS, SO_BUSY_POLL) kept out of Go's
// netpoller on purpose (docs/udp.md, "Receive path"). It matches
// errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("hilrig: UDP transport needs Linux (recvmsg, ppoll, eventfd, SO_TIMESTAMPNS): %w", errors.ErrUnsupported)

// errWouldBlock is ReadDirect's "nothing arrived within wait". Internal:
// never returned by an exported call.
var errWouldBlock = errors.New("udp: no datagram")

// Socket is the Linux UDP socket; off Linux none can be opened.
type Socket struct {
	// RcvBuf/SndBuf are the sizes the kernel granted.
	RcvBuf, SndBuf int
}

var _ Conn = (*Socket)(nil)

// Open fails off Linux with an error matching errors.ErrUnsupported.
func Open(cfg SocketConfig) (*Socket, error) { return nil, errNotLinux }

// WriteTo fails: no Socket exists off Linux.
func (s *Socket) WriteTo(b []byte, to netip.AddrPort) error { return net.ErrClosed }

// WriteTo2 fails: no Socket exists off Linux.
func (s *Socket) WriteTo2(hdr, body []byte, to netip.AddrPort) error { return net.ErrClosed }

// WriteSegs fails: no Socket exists off Linux.
func (s *Socket) WriteSegs(hdrs []byte, hlen int, bodies [][]byte, to netip.AddrPort) error {
	return net.ErrClosed
}

// ReadFrom fails: no Socket exists off Linux.
func (s *Socket) ReadFrom(b []byte) (int, netip.AddrPort, int64, error) {
	return 0, netip.AddrPort{}, 0, net.ErrClosed
}

// ReadDirect fails: no Socket exists off Linux.
func (s *Socket) ReadDirect(b []byte, wait time.Duration) (int, netip.AddrPort, int64, error) {
	return 0, netip.AddrPort{}, 0, net.ErrClosed
}

// SetReadDeadline fails: no Socket exists off Linux.
func (s *Socket) SetReadDeadline(t time.Time) error { return net.ErrClosed }

// LocalAddr is the zero address off Linux.
func (s *Socket) LocalAddr() netip.AddrPort { return netip.AddrPort{} }

// Drops is 0 off Linux.
func (s *Socket) Drops() uint64 { return 0 }

// Close fails: no Socket exists off Linux.
func (s *Socket) Close() error { return net.ErrClosed }
