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

// BestEffortRcvBuf is the SO_RCVBUF to request (SocketConfig.RcvBuf) for a
// best-effort subscriber whose queue holds depth messages of up to
// maxPayload bytes, sent in fragments of fragSize payload bytes: room for
// depth such messages as the kernel charges them, and at least
// BestEffortRcvFloor, so that a publisher faster than its subscriber makes
// the kernel drop datagrams (counted Lost by their sequence gap) instead
// of building a standing queue in the socket (docs/udp.md, "Best effort: a
// bounded queue"). The kernel charges a datagram its buffer's true size,
// measured on loopback at 832 B for 92 B, 2,304 B for 1,472 B, 8,456 B for
// 4,000 B and 66,052 B for 65,000 B: at most 2×len + 1 KiB, which is the
// estimate used, so a whole message always fits. The kernel doubles the
// request (bookkeeping), so the result is half the estimate. Capped at
// 64 MiB, as the reliable default.
func BestEffortRcvBuf(depth, maxPayload, fragSize int) int {
	depth, fragSize = max(depth, 1), max(fragSize, MinFragSize)
	frags := FragCountFor(maxPayload, fragSize)
	dgram := DataHeaderLen + min(max(maxPayload, 1), fragSize)
	perMsg := frags * (2*dgram + 1024)
	return max(min(depth*perMsg/2, 64<<20), BestEffortRcvFloor)
}

// BestEffortRcvFloor is the least BestEffortRcvBuf requests: what arrives
// at full rate while a sleeping consumer is woken (charged 64 KiB: about
// 78 datagrams of 100 B, 28 of 1,472 B). With the kernel's minimum alone
// (two or three small datagrams) a consumer that sleeps when the socket
// is empty lost most of a flat-out stream to its own wake-ups (`hilrig
// bench throughput --transport udp`, 2026-12-07 on a VM at load 10–15:
// 37–87 % lost with the minimum, 26–77 % with this floor, 2–11 % with
// 256 KiB; that is too noisy to tune further). It bounds the wait in the
// socket to about 78 small messages' processing time, where the old
// default of 4 MiB held about 5,000.
const BestEffortRcvFloor = 32 << 10
