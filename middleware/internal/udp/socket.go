package udp

import (
	"log/slog"
	"net/netip"
	"time"
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
	// DedicatedWait makes ReadDirect's blocking receive (a subscriber's
	// consumer waiting in Next/Take) keep the calling goroutine's Go
	// scheduler processor (P) while it waits, as a C thread blocked in
	// recvmsg does: a raw system call instead of one that hands the P
	// back to the runtime. For a thread dedicated to receiving (pinned,
	// real-time): every blocking recvmsg otherwise enters and leaves the
	// scheduler's syscall state, which keeps the runtime's monitor thread
	// (sysmon) waking every 20 µs on the very CPUs the ends are pinned
	// to; measured, that is the shoulder of the round-trip distribution
	// (docs/udp.md, "Dedicated receive threads"). The cost: while it
	// waits, the P runs nothing else. So at most GOMAXPROCS−1 such waits
	// in the process hold a P at once (the others wait as usual), and a
	// garbage collection's stop-the-world still ends promptly: the
	// runtime's preemption signal ends the wait (EINTR, which the
	// socket's receive timeout guarantees), and the receive resumes once
	// the collection lets it. A goroutine made runnable on the held P
	// just before the wait waits for another P to steal it (up to the
	// runtime monitor's tick, ≤ 10 ms).
	DedicatedWait bool
	// Connect, when valid, connects the socket to that peer (connect(2),
	// after binding Listen): datagrams to it then go out without an
	// address (no route lookup per datagram) and only datagrams from it
	// are received. A best-effort publisher's socket per unicast
	// subscriber (SenderConfig.Dial).
	Connect netip.AddrPort
	// Logger receives socket-size warnings. nil discards.
	Logger *slog.Logger
}
