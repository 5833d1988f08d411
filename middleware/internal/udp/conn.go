package udp

import (
	"net/netip"
	"time"
)

// Conn is the datagram socket the Sender and Receiver run on: a *Socket in
// production, a *FaultConn around one in tests. ReadFrom is called by one
// goroutine at a time; WriteTo may be called concurrently.
type Conn interface {
	// WriteTo sends one datagram. 0 allocs.
	WriteTo(b []byte, to netip.AddrPort) error
	// ReadFrom blocks until a datagram arrives, the read deadline passes
	// (an error satisfying os.ErrDeadlineExceeded) or the Conn is closed
	// (net.ErrClosed). rxRealtime is the kernel receive time (SO_TIMESTAMPNS,
	// ns since the epoch, CLOCK_REALTIME) or 0 if none. 0 allocs.
	ReadFrom(b []byte) (n int, from netip.AddrPort, rxRealtime int64, err error)
	// SetReadDeadline bounds the current and future ReadFrom calls.
	SetReadDeadline(t time.Time) error
	// LocalAddr is the bound address.
	LocalAddr() netip.AddrPort
	// Close closes the socket and unblocks ReadFrom. Idempotent.
	Close() error
}

// MaxSegs is the most datagrams one segWriter call sends: the kernel's
// UDP_MAX_SEGMENTS before Linux 6.9 (later kernels take 128).
const MaxSegs = 64

// segWriter is a Conn that sends a run of equal-size datagrams in one call
// (*Socket: sendmsg with UDP_SEGMENT), each from two buffers without
// joining them. The Sender sends DATA fragments through it straight from
// its history: a large message's in runs (across a 1500-byte MTU a 1 MiB
// message is 713 datagrams, and one system call each was most of its
// cost), a lone large fragment as a run of one, which saves a copy of
// every payload byte (docs/udp.md, "Sockets").
type segWriter interface {
	// WriteSegs sends hdrs[i*hlen:(i+1)*hlen] ++ bodies[i] for each i as
	// one datagram each; see (*Socket).WriteSegs for the rules. 0 allocs.
	WriteSegs(hdrs []byte, hlen int, bodies [][]byte, to netip.AddrPort) error
}
