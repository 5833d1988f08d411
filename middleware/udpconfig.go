package middleware

import "time"

// UDPConfig configures the UDP transport of a topic (issue 3; wire format
// and protocol in docs/udp.md). It is plain data carried in the Contract;
// both ends declare the same one, each reading the fields of its role.
// Zero values take the defaults stated per field.
type UDPConfig struct {
	// Listen is the subscriber's local address, "ip:port" (numeric).
	// Required for a subscriber unless Group is set.
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// Source is the publisher's local bind address, "ip:port"; default
	// "0.0.0.0:0" (the kernel picks the address by route, port ephemeral).
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Peers are the remote subscribers' unicast addresses ("ip:port") a
	// publisher sends to. In reliable mode they are expected from the
	// start: the send window waits for them until SubscriberTimeout.
	Peers []string `yaml:"peers,omitempty" json:"peers,omitempty"`
	// Group is a multicast group "addr:port" used with or instead of Peers.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	// Interface is the interface multicast is bound to ("lo" or a veth);
	// required with Group: never the default interface.
	Interface string `yaml:"interface,omitempty" json:"interface,omitempty"`
	// AllowFrom lists the source addresses or CIDR prefixes a subscriber
	// accepts data from and a publisher accepts ACKNACKs from (besides its
	// Peers). Datagrams from elsewhere are dropped and counted
	// (UDPSubscriberStats.UnknownSource). Empty accepts any source: every
	// datagram is still fully validated.
	AllowFrom []string `yaml:"allow_from,omitempty" json:"allow_from,omitempty"`

	// Announce is a multicast group "addr:port" (on Interface) for the
	// light periodic announce: each node sends one small ANNOUNCE datagram
	// per AnnouncePeriod there, listing all its UDP endpoints that announce
	// on this group (several datagrams only when they exceed 1472 bytes,
	// about 17 endpoints with 64-byte names). A node's publishers add the
	// announced subscribers of their topic (from allowed sources) as
	// destinations, so Peers may be empty; tools list endpoints with
	// ListenUDPAnnounces. All endpoints of one node on one group must use
	// the same AnnouncePeriod. Empty: no announces.
	Announce string `yaml:"announce,omitempty" json:"announce,omitempty"`
	// AnnouncePeriod is the announce interval. Default 1 s.
	AnnouncePeriod time.Duration `yaml:"announce_period,omitempty" json:"announce_period,omitempty"`

	// MTU is the path MTU in bytes; the fragment payload is MTU − 28 (IP
	// and UDP headers) − 68 (DATA header). Default 1500 on Ethernet, 65535
	// when every destination is loopback.
	MTU int `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	// FragmentSize overrides the payload bytes per DATA datagram (256..65439).
	FragmentSize int `yaml:"fragment_size,omitempty" json:"fragment_size,omitempty"`

	// BatchBytes > 0 coalesces small messages into one datagram of at most
	// BatchBytes bytes (≤ MTU − 28); a batch goes out when the next message
	// would not fit, BatchDelay after its first message, or on
	// Publisher.FlushBatch. The subscriber unbatches transparently.
	BatchBytes int `yaml:"batch_bytes,omitempty" json:"batch_bytes,omitempty"`
	// BatchDelay is the longest a batched message waits. Default 200 µs.
	BatchDelay time.Duration `yaml:"batch_delay,omitempty" json:"batch_delay,omitempty"`

	// PaceRate > 0 paces the publisher's DATA datagrams (fragments and
	// retransmissions, counted once per destination) to PaceRate bytes/s
	// with a token bucket of PaceBurst bytes, so a large message does not
	// reach a receiver faster than it drains its socket buffer (kernel
	// drops show as RcvbufErrors in /proc/net/snmp; reliable mode repairs
	// them, at the cost of NACK round trips). Send blocks while it paces.
	// 0 (default): no pacing, fragments go out back to back.
	PaceRate int64 `yaml:"pace_rate,omitempty" json:"pace_rate,omitempty"`
	// PaceBurst is the bucket depth in bytes: how much goes out back to
	// back after an idle period. Default 256 KiB.
	PaceBurst int `yaml:"pace_burst,omitempty" json:"pace_burst,omitempty"`

	// KeepLast (Reliable topics) makes Depth a keep-last history instead
	// of a send window, as DDS RELIABLE KEEP_LAST: the publisher never
	// waits for acknowledgements; it repairs losses from its last Depth
	// messages, and a subscriber that falls further behind counts the
	// older ones as lost (UDPSubscriberStats.Lost). Subscribers then
	// acknowledge only in answer to heartbeats. The default (false) is a
	// send window: message s waits until every live subscriber has
	// acknowledged s−Depth, so nothing is lost while subscribers live.
	// Subscribers acknowledge as the publisher's mode asks, which its
	// datagrams carry; a subscriber that declares KeepLast with the
	// publisher's Depth also counts messages gone from that history as lost
	// without waiting for a heartbeat. Ignored for BestEffort, which never
	// waits.
	KeepLast bool `yaml:"keep_last,omitempty" json:"keep_last,omitempty"`
	// HeartbeatPeriod is the publisher's heartbeat interval (reveals tail
	// loss, prompts ACKNACKs). Default 50 ms reliable, 1 s best effort.
	HeartbeatPeriod time.Duration `yaml:"heartbeat_period,omitempty" json:"heartbeat_period,omitempty"`
	// SubscriberTimeout is the silence after which a reliable publisher
	// drops a subscriber from its send window (and may then overwrite
	// history that subscriber had not acknowledged). Silence is measured
	// only over time the publisher was reading its socket with nothing
	// left to read, so a publisher that is busy or starved of CPU never
	// blames a live subscriber. Default 2 s.
	SubscriberTimeout time.Duration `yaml:"subscriber_timeout,omitempty" json:"subscriber_timeout,omitempty"`
	// NackInterval is the minimum spacing of a subscriber's NACKs, about a
	// retransmission's round trip. Default 10 ms.
	NackInterval time.Duration `yaml:"nack_interval,omitempty" json:"nack_interval,omitempty"`
	// ReassemblyBytes bounds the subscriber's reassembly pool (slots of
	// MaxPayload bytes, 2..4096 of them): the memory the network can make a
	// subscriber hold. Default max(4×MaxPayload, 1 MiB), and in reliable
	// mode at least Depth×MaxPayload (the publisher's whole send window);
	// at most 256 MiB.
	ReassemblyBytes int `yaml:"reassembly_bytes,omitempty" json:"reassembly_bytes,omitempty"`
	// ReassemblyTimeout is how long a best-effort incomplete message (or a
	// heartbeat-announced one that never came) waits before it counts as
	// lost. Default 200 ms.
	ReassemblyTimeout time.Duration `yaml:"reassembly_timeout,omitempty" json:"reassembly_timeout,omitempty"`

	// RcvBuf/SndBuf size SO_RCVBUF/SO_SNDBUF in bytes. Default: receive,
	// reliable, max(4 MiB, 2×MaxPayload) capped at 64 MiB; best effort,
	// room for Depth messages and no more (udp.BestEffortRcvBuf), so a
	// publisher faster than the subscriber loses messages instead of
	// queueing them; send 4 MiB. A kernel cap
	// (net.core.rmem_max / wmem_max) is logged as a warning naming the
	// sysctl, after trying SO_RCVBUFFORCE (CAP_NET_ADMIN).
	RcvBuf int `yaml:"rcvbuf,omitempty" json:"rcvbuf,omitempty"`
	SndBuf int `yaml:"sndbuf,omitempty" json:"sndbuf,omitempty"`
	// BusyPoll sets SO_BUSY_POLL on the subscriber's socket; 0 is off.
	BusyPoll time.Duration `yaml:"busy_poll,omitempty" json:"busy_poll,omitempty"`
	// DedicatedReader says the subscriber's consumer runs on a thread
	// dedicated to receiving (pinned, real-time). Its blocking wait in
	// Next/Take then keeps its Go scheduler processor (P) while it
	// sleeps, as a C thread blocked in recvmsg does, instead of handing
	// it back to the runtime for every message; that hand-back keeps the
	// runtime's monitor thread waking on the CPUs the ends are pinned to,
	// and it is the shoulder of the round-trip distribution (docs/udp.md,
	// "Dedicated receive threads": 16 B p90 46 µs → 30 µs). At most
	// GOMAXPROCS−1 such waits in the process hold a P at once; the
	// others wait as usual. A goroutine the consumer makes runnable just
	// before it waits (its callback waking a worker) sits on the held P
	// until another P steals it, which can take up to one tick of the
	// runtime's monitor (up to 10 ms when the process is quiet). Leave it
	// off when the consumer's goroutine is not alone on its thread or its
	// callback hands work to other goroutines. Subscriber only.
	DedicatedReader bool `yaml:"dedicated_reader,omitempty" json:"dedicated_reader,omitempty"`

	// KeyFile names the domain key file (hex, mode 0600 — anything group-
	// or world-accessible is refused with an error naming the file). With
	// a key every datagram carries a 128-bit HMAC-SHA-256 tag and a replay
	// counter; datagrams without a valid tag, or replayed, are dropped and
	// counted (docs/security.md, "UDP"). Both ends need the same key.
	// Default: NodeOptions.UDPKeyFile; empty there too: unauthenticated.
	KeyFile string `yaml:"key_file,omitempty" json:"key_file,omitempty"`
}

// UDPFault is a seeded fault-injection layer under a publisher's socket
// (PublisherOptions.UDPFault; the fault specs' tool, never part of a
// topic's loadable configuration):
// per datagram, in send order, a PCG seeded with Seed decides drop,
// duplicate, reorder (hold and send after the next faulted datagram: with
// DataOnly, heartbeats pass a held DATA without releasing it) and delay.
// The same seed and single-threaded send sequence give the same faults,
// whatever the heartbeat timer does.
type UDPFault struct {
	Seed                                uint64
	Drop, Duplicate, Reorder, DelayRate float64 // probabilities 0..1
	Delay                               time.Duration
	// DataOnly limits faults to DATA/BATCH datagrams, so heartbeats and
	// retransmission control are untouched (exact loss accounting).
	DataOnly bool
}
