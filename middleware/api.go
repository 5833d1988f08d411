package middleware

// This file fixes the public API of the middleware. Other areas of hilrig
// (agent, bench, suites) code against these names; the implementation files
// beside it fill them in. Changing a signature here is a cross-team change.

import (
	"log/slog"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
)

// Reliability is a topic's delivery guarantee.
type Reliability uint8

const (
	// BestEffort never blocks the publisher: on shared memory it overwrites
	// the oldest slot, on UDP it never retransmits. Subscribers count what
	// they missed as loss by sequence gap.
	BestEffort Reliability = iota
	// Reliable makes the publisher wait, up to PublisherOptions.SendTimeout,
	// for the slowest live subscriber (shm) or retransmit on NACK (UDP).
	// Dead subscribers are detected and dropped; they never block forever.
	Reliable
)

// Transport selects how a topic's messages move.
type Transport uint8

const (
	// TransportAuto picks intra-process when both ends are in one process,
	// shared memory on one host, and UDP when the contract names remote peers.
	TransportAuto Transport = iota
	// TransportIntra passes messages inside one process.
	TransportIntra
	// TransportShm uses a ring of slots in a /dev/shm segment.
	TransportShm
	// TransportUDP uses UDP datagrams (see UDPConfig).
	TransportUDP
)

// WaitStrategy is how a subscriber waits for the next message. It is the
// one wait type of the project (internal/kind), so its text form
// ("futex", "spin", "hybrid": String, MarshalText, UnmarshalText) is the
// one the agent protocol and the command lines carry.
type WaitStrategy = kind.Wait

const (
	// WaitFutex sleeps on a futex; the publisher wakes it only when the
	// waiter count is non-zero (no syscall when nobody sleeps).
	WaitFutex = kind.WaitFutex
	// WaitSpin busy-polls: lowest latency, burns one CPU.
	WaitSpin = kind.WaitSpin
	// WaitHybrid spins for SubscriberOptions.SpinFor, then sleeps on the futex.
	WaitHybrid = kind.WaitHybrid
)

// ClockID names the clock a timestamp was read from. Values are the Linux
// clockid_t numbers so they can be passed to clock_gettime unchanged.
type ClockID int32

const (
	ClockRealtime  ClockID = 0  // CLOCK_REALTIME
	ClockMonotonic ClockID = 1  // CLOCK_MONOTONIC
	ClockTAI       ClockID = 11 // CLOCK_TAI
)

// Contract is a static topic contract: both ends must declare the same one.
// It is plain data (yaml/json tags) so rack fixtures can carry it.
type Contract struct {
	// Topic is the topic name: 1..64 bytes of [A-Za-z0-9._/-].
	Topic string `yaml:"topic" json:"topic"`
	// MaxPayload is the largest payload in bytes (up to 16 MiB on UDP).
	MaxPayload int `yaml:"max_payload" json:"max_payload"`
	// Slots is the number of shared-memory ring slots; 0 means Depth+2.
	Slots int `yaml:"slots,omitempty" json:"slots,omitempty"`
	// Reliability is BestEffort (default) or Reliable.
	Reliability Reliability `yaml:"reliability,omitempty" json:"reliability,omitempty"`
	// Depth is the keep-last history depth; 0 means 1 (shm) or the UDP
	// retransmit history size.
	Depth int `yaml:"depth,omitempty" json:"depth,omitempty"`
	// Transport forces a transport; TransportAuto (zero) chooses.
	Transport Transport `yaml:"transport,omitempty" json:"transport,omitempty"`
	// UDP configures the UDP transport; ignored by the others.
	UDP UDPConfig `yaml:"udp,omitempty" json:"udp,omitempty"`
}

// NodeOptions configures a node. A nil *NodeOptions means defaults.
type NodeOptions struct {
	// Domain separates independent systems on one host; it is part of every
	// segment name. Default "0".
	Domain string
	// ShmDir is where segments live. Default /dev/shm.
	ShmDir string
	// Group, when set, creates segments 0660 with this group (multi-user
	// labs); default is 0600 owned by the caller.
	Group string
	// AllowForeignOwner accepts segments owned by another uid.
	AllowForeignOwner bool
	// StampClock is the second clock stamped into every header next to
	// CLOCK_MONOTONIC: ClockRealtime (default) or ClockTAI for cross-host use.
	StampClock ClockID
	// Mlock calls mlockall(MCL_CURRENT|MCL_FUTURE) when the node opens.
	Mlock bool
	// HugePages maps slot arrays with MAP_HUGETLB, falling back to normal
	// pages (and saying so through Logger) when none are available.
	HugePages bool
	// Logger receives warnings (fallbacks, dropped subscribers). Default: discard.
	Logger *slog.Logger
	// ShmReserveAll commits the tmpfs pages of a segment's whole slot pool
	// (Slots+17 slots) when this node creates the segment or opens a
	// publisher on it. By default only the working set (Slots+2 slots) is
	// reserved then, and a further slot, used only while subscribers hold
	// several messages at once, is reserved on its first use (one
	// fallocate syscall, once per slot per publisher) and may then fail
	// with ErrNoSpace. With ShmReserveAll a full filesystem is reported at
	// NewPublisher/NewSubscriber and never later, at the cost of
	// (Slots+17) × slot size of memory per topic (about 200 MiB for a
	// 10 MiB contract with Depth 1). docs/middleware.md, "Space".
	ShmReserveAll bool
	// UDPKeyFile names the domain key of this node's UDP endpoints whose
	// contract names none (UDPConfig.KeyFile): hex, mode 0600. Every
	// datagram is then authenticated (docs/security.md, "UDP"). Empty: an
	// unauthenticated domain.
	UDPKeyFile string
}

// PublisherOptions configures a publisher. nil means defaults.
type PublisherOptions struct {
	// SendTimeout bounds how long a Reliable Send/Publish waits for the
	// slowest subscriber before returning ErrTimeout. Default 1 s.
	SendTimeout time.Duration
	// Stages, when non-nil, receives the shared-memory stage stamps of
	// every message this publisher commits (shm and intra transports;
	// ignored by udp), on the publishing goroutine, before Send/Publish
	// returns. It must not block or retain the argument. nil (the
	// default) costs one branch per message.
	Stages func(*PublishStages)
	// UDPFault, when non-nil, puts a seeded fault-injection layer under a
	// UDP publisher's socket (drop, duplicate, reorder, delay; counted in
	// UDPPublisherStats.Fault); ignored by shm and intra. It is a per-call
	// option for fault tests, not a topic's configuration, so UDPConfig
	// (decoded from fixtures) has no such field. nil (the default): none.
	UDPFault *UDPFault
}

// PublishStages are the publisher-side stage stamps of one message,
// CLOCK_MONOTONIC ns (the clock of Header.SendMono and RecvMono, so they
// join the subscriber's ReceiveStages by Seq on one host).
type PublishStages struct {
	Seq uint64
	// Entry is Header.SendMono (entry of Send / Loan.Publish).
	Entry int64
	// CopyStart/CopyEnd bracket the payload copy into the slot (Send
	// only; on the loan path the caller filled the slot: both are 0).
	CopyStart, CopyEnd int64
	// Commit is taken just before the frame is committed and the
	// subscribers are woken: commit → wake is ReceiveStages.Wake − Commit.
	Commit int64
}

// ReceiveStages are the subscriber-side stage stamps of one message,
// CLOCK_MONOTONIC ns.
type ReceiveStages struct {
	Seq uint64
	// Wake is when the receive loop woke from its futex sleep (or its
	// spin) and found the message; a message already waiting when the
	// loop looked has Wake == the time it looked.
	Wake int64
	// Callback is Message.RecvMono, taken just before the callback.
	Callback int64
}

// SubscriberOptions configures a subscriber. nil means defaults.
type SubscriberOptions struct {
	// Wait is the wait strategy. Default WaitFutex.
	Wait WaitStrategy
	// SpinFor is how long WaitHybrid spins before sleeping. Default 50 µs.
	SpinFor time.Duration
	// CPU, when non-nil, pins the receive loop's OS thread to that CPU
	// (sched_setaffinity on a thread locked for Receive/Next). nil (the
	// zero value) means no pinning, so a zero SubscriberOptions never pins.
	CPU *int
	// Priority is a SCHED_FIFO priority (1..99) for the receive thread; 0
	// leaves the scheduler alone. Needs CAP_SYS_NICE.
	Priority int
	// DedicatedWait says the receive loop runs on a thread dedicated to
	// receiving (typically with CPU and Priority set). Its futex sleep
	// (WaitFutex, and WaitHybrid after its spin) then keeps the thread's
	// Go scheduler processor (P) while it sleeps, as a C thread blocked in
	// futex(2) does, instead of handing it back to the runtime for every
	// message: that hand-back costs context switches of the runtime's
	// monitor thread on the subscriber's CPU (a 50 Hz 1 MiB stream: 64–70
	// switches per message, 12–14 with DedicatedWait; docs/middleware.md,
	// "Dedicated waits"). At most GOMAXPROCS−1 such waits in the process
	// (UDPConfig.DedicatedReader's included) hold a P at once; the others
	// sleep as usual. A goroutine the callback makes runnable sits on the
	// held P until another P steals it (up to one tick of the runtime's
	// monitor, ≤ 10 ms when the process is quiet): leave it off when the
	// callback hands work to other goroutines. Shared memory and
	// intra-process; UDP subscribers use UDPConfig.DedicatedReader.
	DedicatedWait bool
	// Stages, when non-nil, receives the stage stamps of every message
	// (shm and intra transports; ignored by udp) on the receive
	// goroutine, just before the callback. It must not block or retain
	// the argument. nil (the default) costs one branch per message.
	Stages func(*ReceiveStages)
}

// Header is the frame header carried with every message. Layout in shared
// memory: docs/middleware.md ("Slot header"); on the wire: docs/udp.md.
//
// SendMono and SendClock are one reading, taken back to back, of when the
// caller handed the message over. On shared memory and intra-process that
// is the entry of Publisher.Send (before the Reliable back-pressure wait
// and before the payload copy) or the entry of Loan.Publish (before the
// commit; the loan's own Reliable wait and the filling happened earlier,
// in the caller's time). Message.RecvMono − SendMono is therefore what a
// scope sees between a marker raised just before Send/Publish and one
// raised in the callback, minus the callback's own entry cost: it
// includes blocking, copy, commit, wake-up and scheduling.
type Header struct {
	Version   uint8   // frame layout version
	Flags     uint8   // FlagXxx bits
	TopicID   uint32  // hash of the topic name
	Epoch     uint32  // publisher epoch; a restarted publisher bumps it
	Seq       uint64  // per-epoch sequence number, first message is 1
	SendMono  int64   // hand-over time (see above), ns, CLOCK_MONOTONIC
	SendClock int64   // the same instant, ns, on Clock
	Clock     ClockID // which clock SendClock was read from
	Len       uint32  // payload length in bytes
}

// Message is a received message. Payload is a read-only view into transport
// memory, valid only until the callback that received it returns; use
// CopyPayload to keep it.
type Message struct {
	Header Header
	// RecvMono is when the subscriber took the message, ns, CLOCK_MONOTONIC.
	RecvMono int64
	// Lost is how many messages were missed just before this one (sequence
	// gap), 0 normally.
	Lost    uint64
	Payload []byte
}

// PublisherStats are the publisher's cumulative counters since
// NewPublisher, counted in this process (never read back from a shared
// segment, which any writer of the file can overwrite). Safe to read
// concurrently.
type PublisherStats struct {
	Published   uint64        // messages published
	Blocked     time.Duration // total time spent waiting (Reliable)
	Timeouts    uint64        // sends that returned ErrTimeout
	DroppedSubs uint64        // subscribers dropped as dead
}

// SubscriberStats are the subscriber's cumulative counters since
// NewSubscriber, counted in this process like PublisherStats. Safe to read
// concurrently.
type SubscriberStats struct {
	Delivered   uint64 // messages handed to the caller
	Lost        uint64 // messages missed by sequence gap
	Overruns    uint64 // times the publisher lapped this subscriber (best effort)
	TornRetries uint64 // seqlock retries while reading
	Epochs      uint64 // publisher epoch changes seen
}
