package udp

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SenderConfig configures a Sender. Zero values take the defaults noted.
type SenderConfig struct {
	TopicID uint32
	// Epoch identifies this publisher incarnation; a restart must pick a
	// new one. 0 is replaced by a random non-zero value.
	Epoch      uint32
	MaxPayload int // largest message, bytes (≤ MaxPayload)
	// FragSize is the payload bytes per DATA datagram. Default 1472 −
	// DataHeaderLen (an Ethernet MTU).
	FragSize int
	Reliable bool
	// Depth is the retransmit history in messages and, in reliable mode,
	// the send window: message s is not sent before every live subscriber
	// acknowledged s−Depth (unless KeepLast). Default 16 (reliable), 1
	// (best effort).
	Depth int
	// KeepLast (reliable only) makes Depth a keep-last history and not a
	// send window, as DDS RELIABLE KEEP_LAST: a send never waits for
	// acknowledgements; message s overwrites s−Depth whether or not it was
	// acknowledged, and a subscriber that NACKs an overwritten message is
	// told where the history starts (it counts the rest as lost). Losses
	// are still repaired while the message is in the history. Every DATA
	// and BATCH datagram says so (FlagKeepLast), and receivers follow it
	// whatever they declare: they then acknowledge only in answer to
	// heartbeats.
	KeepLast bool
	// Peers are the destinations: unicast subscribers and/or a group.
	// Unicast peers are expected subscribers from the start in reliable
	// mode (waited for until SubscriberTimeout); others are learned from
	// their ACKNACKs.
	Peers []netip.AddrPort
	// AllowFrom, when non-empty, restricts whose ACKNACKs are accepted (in
	// addition to the Peers' addresses).
	AllowFrom []netip.Prefix
	// HeartbeatPeriod is the heartbeat interval. Default 50 ms reliable,
	// 1 s best effort.
	HeartbeatPeriod time.Duration
	// SubscriberTimeout is the silence after which a subscriber is dropped
	// from the send window, counted only over time the control loop found
	// its socket empty (see heardUpTo). Default 2 s.
	SubscriberTimeout time.Duration
	// SendTimeout bounds a reliable send's wait for the window. Default 1 s.
	SendTimeout time.Duration
	// StallTimeout bounds how long one learned subscriber (not one of
	// Peers) may hold the send window shut without its acknowledgement
	// moving: then it is taken out of the window (Stalled) until it
	// acknowledges the window's start again, and may lose messages
	// itself. Each further stall of the same source address within
	// stallMemory StallTimeouts halves what it may hold (so one address
	// holds the stream at most 2×StallTimeout in that time). Contract
	// peers are waited for as the contract says (SendTimeout,
	// SubscriberTimeout). It also paces retransmission budgets (one
	// history per StallTimeout). Default SendTimeout/2
	// (docs/security.md, "What is bounded").
	StallTimeout time.Duration
	// BatchBytes > 0 coalesces messages whose record fits into BATCH
	// datagrams of at most BatchBytes (≤ FragSize+DataHeaderLen); they are
	// sent when the next would not fit, after BatchDelay, or on Flush.
	BatchBytes int
	BatchDelay time.Duration // default 200 µs when batching
	// Clock and Stamp stamp headers: Stamp returns (CLOCK_MONOTONIC ns,
	// Clock ns). Default: time.Now for both with Clock 0 (REALTIME).
	Clock int32
	Stamp func() (mono, other int64)
	// LearnTTL is how long a destination learned from a subscriber's
	// ANNOUNCE (LearnAnnounce) stays without being announced again;
	// 3 announce periods in the middleware. Default 3 s.
	LearnTTL time.Duration
	// HeaderVersion is stamped into every message header (Version).
	HeaderVersion uint8
	// PaceRate > 0 paces DATA datagrams (first sends and retransmissions,
	// counted once per destination) with a token bucket of PaceRate
	// bytes/s and PaceBurst bytes, so a large message does not arrive at a
	// receiver faster than its socket buffer drains. 0: no pacing.
	PaceRate int64
	// PaceBurst is the bucket depth in bytes. Default 256 KiB.
	PaceBurst int
	// MaxSubscribers bounds the learned subscriber table. Default 64.
	MaxSubscribers int
	// Key, when set, authenticates every datagram sent and received
	// (docs/udp.md, "Authentication"). FragSize must then leave AuthLen
	// bytes of room in the datagram.
	Key *Key
	// Dial, when set, opens a socket connected to a unicast peer
	// (SocketConfig.Connect). A best-effort, unbatched, unauthenticated
	// sender whose Peers hold no group uses one per unicast peer (the
	// first MaxRoutes): every datagram to that peer goes out on it
	// without an address, so without a route lookup (the raw-UDP
	// baseline's connected write), and the peer's ACKNACKs, which answer
	// the source address, are read from it by a goroutine of its own.
	// The sender owns and closes them. A Dial error falls back to the
	// shared socket for that peer (logged). docs/udp.md, "Connected
	// sockets".
	Dial   func(to netip.AddrPort) (Conn, error)
	Logger *slog.Logger
}

// MaxRoutes bounds the connected sockets (SenderConfig.Dial) of one
// sender: each holds a descriptor and a reading thread.
const MaxRoutes = 8

// route is a socket connected to one unicast destination.
type route struct {
	to   netip.AddrPort
	conn Conn
	sw   segWriter // nil when the shared socket's sends are copied too
}

func (c *SenderConfig) withDefaults() (SenderConfig, error) {
	o := *c
	if o.MaxPayload < 0 || o.MaxPayload > MaxPayload {
		return o, fmt.Errorf("%w: MaxPayload %d outside 0..%d", ErrConfig, o.MaxPayload, MaxPayload)
	}
	if o.FragSize == 0 {
		o.FragSize = 1472 - DataHeaderLen
	}
	if top := MaxDatagram - DataHeaderLen - o.Key.Overhead(); o.FragSize < MinFragSize || o.FragSize > top {
		return o, fmt.Errorf("%w: FragSize %d outside %d..%d", ErrConfig, o.FragSize, MinFragSize, top)
	}
	if o.Depth <= 0 {
		o.Depth = 1
		if o.Reliable {
			o.Depth = 16
		}
	}
	if !o.Reliable {
		o.Depth = 1
		o.KeepLast = false
	}
	if o.HeartbeatPeriod == 0 {
		o.HeartbeatPeriod = time.Second
		if o.Reliable {
			o.HeartbeatPeriod = 50 * time.Millisecond
		}
	}
	if o.SubscriberTimeout == 0 {
		o.SubscriberTimeout = 2 * time.Second
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = o.SendTimeout / 2
	}
	if o.BatchBytes > 0 {
		if o.BatchBytes < BatchHeaderLen+RecordHeaderLen+1 || o.BatchBytes > o.FragSize+DataHeaderLen {
			return o, fmt.Errorf("%w: BatchBytes %d outside %d..%d (FragSize+header)", ErrConfig, o.BatchBytes, BatchHeaderLen+RecordHeaderLen+1, o.FragSize+DataHeaderLen)
		}
		if o.BatchDelay == 0 {
			o.BatchDelay = 200 * time.Microsecond
		}
	}
	if o.Stamp == nil {
		o.Stamp = func() (int64, int64) { t := time.Now(); return t.UnixNano(), t.UnixNano() }
	}
	if o.PaceRate < 0 || o.PaceBurst < 0 {
		return o, fmt.Errorf("%w: PaceRate %d B/s, PaceBurst %d B: want ≥ 0", ErrConfig, o.PaceRate, o.PaceBurst)
	}
	if o.PaceRate > 0 && o.PaceBurst == 0 {
		o.PaceBurst = 256 << 10
	}
	if o.LearnTTL <= 0 {
		o.LearnTTL = 3 * time.Second
	}
	if o.MaxSubscribers == 0 {
		o.MaxSubscribers = 64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// SenderStats are cumulative counters, safe to read concurrently.
type SenderStats struct {
	Published     uint64        // messages published
	Datagrams     uint64        // datagrams written (all kinds, all peers)
	Writes        uint64        // send calls that wrote them (one GSO call writes many)
	Bytes         uint64        // their bytes
	Batches       uint64        // BATCH datagrams sent
	Batched       uint64        // messages sent inside batches
	Retransmits   uint64        // fragments sent again on NACK
	NacksReceived uint64        // ACKNACKs with entries
	AcksReceived  uint64        // ACKNACKs in total
	Heartbeats    uint64        // heartbeats sent
	Blocked       time.Duration // time spent waiting for the window
	Timeouts      uint64        // sends that returned ErrTimeout
	DroppedSubs   uint64        // subscribers dropped as dead
	LiveSubs      uint64        // subscribers currently in the window
	Malformed     uint64        // invalid datagrams received
	UnknownSource uint64        // ACKNACKs from outside AllowFrom/Peers
	StaleEpoch    uint64        // ACKNACKs for another epoch or topic
	WriteErrors   uint64        // socket write failures
	Paced         time.Duration // time slept pacing (PaceRate)
	// Unproven counts ACKNACKs from a source that is neither a static
	// peer nor returned its token: answered with one HEARTBEAT (echo and
	// token), otherwise ignored (no retransmission, no window).
	Unproven uint64
	// Echoes counts the unicast HEARTBEATs that answered challenges.
	Echoes uint64
	// EchoLimited counts challenges not answered (per-peer rate limit).
	EchoLimited uint64
	// Unauthenticated counts datagrams dropped for a missing or bad tag;
	// Replayed ACKNACKs whose counter the subscriber used before.
	Unauthenticated, Replayed uint64
	// AcksInline counts the ACKNACKs a sender read itself, on its own
	// thread, while it waited for the window (reliable); the others woke
	// the control goroutine.
	AcksInline uint64
	// Stalled counts subscribers taken out of the send window for
	// holding it shut without acknowledging (StallTimeout).
	Stalled uint64
	// RetransLimited counts the bytes of retransmissions asked for and
	// not sent because the subscriber's retransmission budget (one byte
	// per byte published, plus one history) was spent.
	RetransLimited uint64
}

type histEntry struct {
	buf []byte
	n   int
	seq uint64
	hdr MsgHeader
}

type learnedDest struct {
	addr     netip.AddrPort
	lastSeen int64
}

type subState struct {
	addr     netip.AddrPort
	ack      uint64
	lastSeen int64
	static   bool
	heard    bool
	rw       replayWindow // keyed domains: the subscriber's counters
	// ackAt is when ack last moved (or the subscriber was learned);
	// lagging: taken out of the window for stalling it (see stall), back
	// once it acknowledges the window's start.
	ackAt   int64
	lagging bool
	// credit is the subscriber's retransmission budget in payload bytes,
	// as of creditAt (the sender's pubBytes then) and creditTime (ns
	// since base): it earns one byte per byte published and one history
	// per StallTimeout, up to one history (retransBurst).
	credit, creditAt, creditTime int64
}

// Sender is the publishing side of one topic. Loan/Publish/Send/Flush are
// not safe for concurrent use with each other (the middleware serialises
// them); Stats is. A goroutine it owns reads ACKNACKs, retransmits, sends
// heartbeats and flushes batches.
type Sender struct {
	cfg   SenderConfig
	conn  Conn
	base  time.Time
	dests []netip.AddrPort

	mu      sync.Mutex
	seq     uint64 // last published
	hist    []histEntry
	subs    []subState
	loaned  bool
	scratch []byte
	data    Data
	batch   BatchWriter
	bbuf    []byte
	batchAt int64 // when the open batch got its first record, -1 none
	hb      Heartbeat
	closed  bool

	// routes are the connected sockets (SenderConfig.Dial), fixed after
	// NewSender.
	routes []route

	ackCh chan struct{}
	timer *time.Timer
	btim  *preciseTimer // batch-delay timer (batching only)
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once

	// control goroutine state
	rbuf   []byte
	an     AckNack
	vmac   *mac // verifies ACKNACKs (nil: unauthenticated domain)
	echoAt [echoSlots]int64

	// Inline reads (reliable, and a Conn with ReadDirect): Send and Loan
	// read the ACKNACKs they wait for on the caller's thread, and the
	// control goroutine leaves the socket alone while they do (see
	// docs/udp.md, "Receive path"). Reading them in the goroutine cost a
	// second thread wake-up per message: the ACKNACK woke it, then it
	// woke the sender. dc is nil otherwise.
	dc directConn
	// sw sends DATA fragments without copying their payload, a run of
	// them in one call (UDP GSO): a Conn that can, in an unauthenticated
	// domain; nil: marshal each into scratch. segRun is the most fragments
	// per call (1 when two do not fit a datagram's worth of bytes); segHdr
	// holds their headers and segBody their payloads while a run is sent
	// (guarded by mu).
	sw      segWriter
	segRun  int
	segHdr  []byte
	segBody [][]byte
	// rmu is held by whoever reads the socket: the goroutine (ReadFrom)
	// or a sender (ReadDirect). Lock order rmu, then mu: nobody acquires
	// rmu holding mu (a sender releases mu first, see readInline), and
	// the goroutine takes mu only after releasing rmu.
	rmu sync.Mutex
	// lease: a sender's hold on rmu (senderLease), see readLease.
	lease readLease
	// The sender's own read state: used only by the caller of
	// Send/Loan, which the middleware serialises.
	ibuf  []byte
	ian   AckNack
	ivmac *mac

	mac   *mac // seals what the sender sends (guarded by mu)
	tseed maphash.Seed

	learned []learnedDest // guarded by mu

	// pubBytes is the payload bytes published so far (mu): what the
	// retransmission budgets earn from. stallHist remembers, per hashed
	// source address, how often it stalled the window and when last
	// (mu; see stall).
	pubBytes  int64
	stallHist [stallSlots]stallMark

	// Pacing token bucket (guarded by mu): tokens in bytes, refilled at
	// PaceRate from paceAt (ns since base). It may go negative by up to
	// paceSlack before the sender sleeps, so sleeps are few and long
	// enough for the timer to honour; oversleeping is credited back.
	tokens, paceAt, paceSlack int64
	paced                     atomic.Int64 // ns slept pacing
	// heardUpTo (ns since base, guarded by mu) is the start of the control
	// loop's latest read that found the socket empty until its deadline:
	// every ACKNACK sent before then has been read. A subscriber counts as
	// dead only when it was silent for SubscriberTimeout *before* that
	// point. Measuring silence against the wall clock instead blamed the
	// subscriber for the publisher's own deafness (the loop busy
	// retransmitting, or starved of CPU), dropped it from the window,
	// overwrote unacknowledged history and turned into message loss.
	heardUpTo int64

	st struct {
		published, datagrams, bytes, batches, batched, retrans, nacks, acks, hbs,
		blocked, timeouts, dropped, live, malformed, unknownSource, stale, werr,
		unproven, echoes, echoLimited, unauth, replayed, acksInline, writes, stalled, retransLimited atomic.Uint64
	}
}

// stallMark is one address's stall history (stallHist).
type stallMark struct {
	n  int
	at int64
}

// NewSender starts a sender on conn (which it owns and closes).
func NewSender(conn Conn, cfg SenderConfig) (*Sender, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for c.Epoch == 0 {
		c.Epoch = randEpoch()
	}
	s := &Sender{cfg: c, conn: conn, base: time.Now(), dests: c.Peers, batchAt: -1,
		ackCh: make(chan struct{}, 1), done: make(chan struct{})}
	s.hist = make([]histEntry, c.Depth)
	s.scratch = make([]byte, DataHeaderLen+c.FragSize+AuthLen)
	t0 := uint64(time.Now().UnixNano())
	s.mac, s.vmac, s.tseed = c.Key.newMAC(t0), c.Key.newMAC(0), maphash.MakeSeed()
	if c.BatchBytes > 0 {
		s.bbuf = make([]byte, c.BatchBytes, c.BatchBytes+AuthLen)
		s.batch.KeepLast = c.KeepLast
		s.batch.Reset(s.bbuf)
		if s.btim, err = newPreciseTimer(); err != nil {
			return nil, err
		}
	}
	s.rbuf = make([]byte, MaxDatagram+1)
	// A FaultConn has no WriteSegs: it needs each whole datagram.
	if sw, ok := conn.(segWriter); ok && s.mac == nil {
		run := max(1, min(MaxSegs, MaxDatagram/(DataHeaderLen+c.FragSize)))
		s.sw, s.segRun = sw, run
		s.segHdr, s.segBody = make([]byte, run*DataHeaderLen), make([][]byte, run)
	}
	if dc := asDirect(conn); dc != nil && c.Reliable {
		s.dc = dc
		s.ibuf = make([]byte, MaxDatagram+1)
		s.ivmac = c.Key.newMAC(0)
		s.lease.init(senderLease)
	}
	if c.PaceRate > 0 {
		s.tokens = int64(c.PaceBurst)
		s.paceSlack = max(c.PaceRate/5000, int64(DataHeaderLen+c.FragSize)) // 200 µs of traffic, ≥ 1 datagram
	}
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	s.dial()
	if c.Reliable {
		for _, p := range c.Peers {
			if !p.Addr().IsMulticast() {
				s.subs = append(s.subs, subState{addr: p, lastSeen: 0, static: true, credit: s.retransBurst()})
			}
		}
		s.st.live.Store(uint64(len(s.subs)))
	}
	s.subs = append(make([]subState, 0, len(s.subs)+c.MaxSubscribers), s.subs...)
	s.wg.Add(1 + len(s.routes))
	go s.loop()
	for i := range s.routes {
		go s.routeLoop(&s.routes[i])
	}
	if s.btim != nil {
		s.wg.Add(1)
		go s.batchLoop()
	}
	return s, nil
}

// Epoch is this sender's epoch.
func (s *Sender) Epoch() uint32 { return s.cfg.Epoch }

// FragSize is the payload bytes per DATA datagram.
func (s *Sender) FragSize() int { return s.cfg.FragSize }

// LocalAddr is the socket's bound address (where ACKNACKs arrive).
func (s *Sender) LocalAddr() netip.AddrPort { return s.conn.LocalAddr() }

func (s *Sender) now() int64 { return int64(time.Since(s.base)) }

// Stats returns the counters.
func (s *Sender) Stats() SenderStats {
	t := &s.st
	return SenderStats{
		Published: t.published.Load(), Datagrams: t.datagrams.Load(), Bytes: t.bytes.Load(),
		Batches: t.batches.Load(), Batched: t.batched.Load(), Retransmits: t.retrans.Load(),
		NacksReceived: t.nacks.Load(), AcksReceived: t.acks.Load(), Heartbeats: t.hbs.Load(),
		Blocked: time.Duration(t.blocked.Load()), Timeouts: t.timeouts.Load(), DroppedSubs: t.dropped.Load(),
		LiveSubs: t.live.Load(), Malformed: t.malformed.Load(), UnknownSource: t.unknownSource.Load(),
		StaleEpoch: t.stale.Load(), WriteErrors: t.werr.Load(), Paced: time.Duration(s.paced.Load()),
		Unproven: t.unproven.Load(), Echoes: t.echoes.Load(), EchoLimited: t.echoLimited.Load(),
		Unauthenticated: t.unauth.Load(), Replayed: t.replayed.Load(), AcksInline: t.acksInline.Load(),
		Writes: t.writes.Load(), Stalled: t.stalled.Load(), RetransLimited: t.retransLimited.Load(),
	}
}

// LiveSubscribers returns how many subscribers have been heard from and
// not timed out.
func (s *Sender) LiveSubscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := range s.subs {
		if s.subs[i].heard {
			n++
		}
	}
	return n
}

// Loan returns the payload area (len MaxPayload) of the next message,
// waiting for the send window in reliable mode. 0 allocs in steady state.
func (s *Sender) Loan() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.loaned {
		return nil, ErrLoanOutstanding
	}
	h, err := s.slotFor(s.seq + 1)
	if err != nil {
		return nil, err
	}
	s.loaned = true
	return h.buf, nil
}

// Discard returns an open loan unpublished.
func (s *Sender) Discard() {
	s.mu.Lock()
	s.loaned = false
	s.mu.Unlock()
}

// Publish publishes the first n bytes of the loaned area. 0 allocs. The
// header is stamped at entry: the loan's window wait and the filling of
// the area happened before, in the caller's time.
func (s *Sender) Publish(n int) error {
	mono, other := s.cfg.Stamp()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaned {
		return fmt.Errorf("%w: Publish without Loan", ErrConfig)
	}
	s.loaned = false
	if n < 0 || n > s.cfg.MaxPayload {
		return ErrTooLarge
	}
	return s.publishLocked(n, mono, other)
}

// Send copies payload and publishes it. Blocks up to SendTimeout for the
// window (reliable). 0 allocs in steady state. The header is stamped at
// entry, before the lock, the window wait and the copy, as on shared
// memory: RecvMono − SendMono then covers back-pressure too, as a scope
// marker raised just before Send does.
func (s *Sender) Send(payload []byte) error {
	mono, other := s.cfg.Stamp()
	if len(payload) > s.cfg.MaxPayload {
		return ErrTooLarge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.loaned {
		return ErrLoanOutstanding
	}
	h, err := s.slotFor(s.seq + 1)
	if err != nil {
		return err
	}
	copy(h.buf, payload)
	return s.publishLocked(len(payload), mono, other)
}

// slotFor waits for the window to admit seq and returns its history entry.
// Keep-last never waits: the entry of seq−Depth is overwritten.
func (s *Sender) slotFor(seq uint64) (*histEntry, error) {
	h := &s.hist[(seq-1)%uint64(len(s.hist))]
	if s.cfg.Reliable && seq > uint64(len(s.hist)) {
		need := seq - uint64(len(s.hist))
		if s.dc != nil {
			// Read what the subscribers sent when the window is shut
			// (the acknowledgement is usually queued already) or when
			// the socket was not read for inlineEvery (NACKs wait no
			// longer than that while the window stays open, or, keep-
			// last, while the sender sends).
			now := s.now()
			shut := !s.cfg.KeepLast && s.minAck(now) < need
			if shut || now-s.lease.touched.Load() >= int64(inlineEvery) {
				s.mu.Unlock()
				s.readInline(0, need)
				s.mu.Lock()
				if s.closed {
					return nil, ErrClosed
				}
			}
		}
		if !s.cfg.KeepLast {
			if err := s.waitWindow(need); err != nil {
				return nil, err
			}
		}
	}
	if h.buf == nil {
		h.buf = make([]byte, max(s.cfg.MaxPayload, 1))
	}
	// The entry's message (seq−Depth) is gone from here on: a NACK for it
	// while a loan fills the buffer must not retransmit half-new bytes.
	h.seq = 0
	return h, nil
}

// waitWindow blocks (mu held, released while waiting) until every live
// subscriber acknowledged seq or SendTimeout passes.
func (s *Sender) waitWindow(seq uint64) error {
	var start int64 = -1
	for {
		now := s.now()
		if s.minAck(now) >= seq {
			if start >= 0 {
				s.st.blocked.Add(uint64(now - start))
			}
			return nil
		}
		if start < 0 {
			start = now
		} else if s.stall(seq, start, now) {
			continue // a stalling subscriber left the window: look again
		}
		if now-start >= int64(s.cfg.SendTimeout) {
			s.st.blocked.Add(uint64(now - start))
			s.st.timeouts.Add(1)
			return ErrTimeout
		}
		if s.dc != nil {
			// Wait in the socket on this thread: the acknowledgement
			// wakes the sender itself.
			wait := min(time.Duration(start+int64(s.cfg.SendTimeout)-now), maxSleep)
			s.mu.Unlock()
			s.readInline(wait, seq)
			s.mu.Lock()
			if s.closed {
				return ErrClosed
			}
			continue
		}
		// Sliced like the inline wait, so the stall bound is checked.
		s.timer.Reset(min(time.Duration(start+int64(s.cfg.SendTimeout)-now), maxSleep))
		s.mu.Unlock()
		select {
		case <-s.ackCh:
		case <-s.timer.C:
		case <-s.done:
		}
		s.timer.Stop()
		s.mu.Lock()
		if s.closed {
			return ErrClosed
		}
	}
}

// minAck is the lowest acknowledgement among live subscribers (all ones
// silent past SubscriberTimeout are dropped first); MaxUint64 when none.
func (s *Sender) minAck(now int64) uint64 {
	m := ^uint64(0)
	live := 0
	for i := 0; i < len(s.subs); i++ {
		sub := &s.subs[i]
		if s.heardUpTo-sub.lastSeen > int64(s.cfg.SubscriberTimeout) {
			s.st.dropped.Add(1)
			s.cfg.Logger.Warn("udp: subscriber dropped as dead", "peer", sub.addr, "silent", time.Duration(s.heardUpTo-sub.lastSeen))
			s.subs[i] = s.subs[len(s.subs)-1]
			s.subs = s.subs[:len(s.subs)-1]
			i--
			continue
		}
		live++
		if !sub.lagging {
			m = min(m, sub.ack)
		}
	}
	s.st.live.Store(uint64(live))
	return m
}

// dial opens the connected sockets SenderConfig.Dial allows (NewSender).
func (s *Sender) dial() {
	c := &s.cfg
	if c.Dial == nil || c.Reliable || c.BatchBytes > 0 || c.Key != nil || slices.ContainsFunc(s.dests, func(d netip.AddrPort) bool { return d.Addr().IsMulticast() }) {
		return
	}
	for _, to := range s.dests {
		if len(s.routes) == MaxRoutes || slices.ContainsFunc(s.routes, func(r route) bool { return r.to == to }) {
			continue
		}
		conn, err := c.Dial(to)
		if err != nil {
			c.Logger.Warn("udp: no connected socket for a subscriber; sending from the shared one", "peer", to, "err", err)
			continue
		}
		rt := route{to: to, conn: conn}
		if s.sw != nil {
			// Runs of fragments go out on the route too: one source
			// address per destination, or the subscriber sees two.
			sw, ok := conn.(segWriter)
			if !ok {
				_ = conn.Close()
				c.Logger.Warn("udp: a connected socket without segmented sends; sending from the shared one", "peer", to)
				continue
			}
			rt.sw = sw
		}
		s.routes = append(s.routes, rt)
	}
}

// via is the socket datagrams to `to` leave on: its route's, else the
// shared one. The routes are few (MaxRoutes) and fixed.
func (s *Sender) via(to netip.AddrPort) (Conn, segWriter) {
	for i := range s.routes {
		if s.routes[i].to == to {
			return s.routes[i].conn, s.routes[i].sw
		}
	}
	return s.conn, s.sw
}

// routeLoop reads one connected socket: its peer's ACKNACKs (challenges
// and acknowledgements of a best-effort stream), applied as the control
// loop applies the shared socket's. Ends when the sender closes it.
func (s *Sender) routeLoop(rt *route) {
	defer s.wg.Done()
	buf := make([]byte, MaxDatagram+1)
	var a AckNack
	for {
		n, from, _, err := rt.conn.ReadFrom(buf)
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.cfg.Logger.Warn("udp: receive error", "local", rt.conn.LocalAddr(), "err", err)
			}
			continue
		}
		ctr, ok := s.parseControl(buf[:n], from, &a, nil) // routes are unauthenticated only
		if !ok {
			continue
		}
		now := s.now()
		s.mu.Lock()
		if !s.closed {
			s.applyControl(&a, from, ctr, now)
		}
		s.mu.Unlock()
	}
}

func (s *Sender) write(b []byte, to netip.AddrPort) {
	conn, _ := s.via(to)
	if err := conn.WriteTo(b, to); err != nil {
		// Counted always; logged on the first and every 10000th so a wrong
		// MTU (EMSGSIZE) or a missing route is visible without flooding.
		if n := s.st.werr.Add(1); n == 1 || n%10000 == 0 {
			s.cfg.Logger.Warn("udp: send failed", "peer", to, "bytes", len(b), "errors", n, "err", err)
		}
		return
	}
	s.st.writes.Add(1)
	s.st.datagrams.Add(1)
	s.st.bytes.Add(uint64(len(b)))
}

// paceFor takes n bytes per destination from the pacing bucket (when
// pacing is on): to, or every destination when to is the zero address.
func (s *Sender) paceFor(n int, to netip.AddrPort) {
	if s.cfg.PaceRate <= 0 {
		return
	}
	nd := 1
	if !to.IsValid() {
		nd = len(s.dests) + len(s.learned)
	}
	s.pace(int64(n * nd))
}

// vecMin is the smallest fragment payload sent alone from the history
// (sendmsg, two iovecs) instead of being copied behind its header: below
// it the copy costs less than the second iovec.
const vecMin = 1024

// writeSegs sends a run of fragments (headers in hdrs, payloads in
// bodies, bytes in all) through sw to `to`, or to every destination when
// `to` is not valid (mu held).
func (s *Sender) writeSegs(hdrs []byte, bodies [][]byte, bytes int, to netip.AddrPort) {
	if to.IsValid() {
		s.writeSegsTo(hdrs, bodies, bytes, to)
		return
	}
	for _, p := range s.dests {
		s.writeSegsTo(hdrs, bodies, bytes, p)
	}
	for i := range s.learned {
		s.writeSegsTo(hdrs, bodies, bytes, s.learned[i].addr)
	}
}

// writeSegsTo is write for a run of fragments (or a lone one).
func (s *Sender) writeSegsTo(hdrs []byte, bodies [][]byte, bytes int, to netip.AddrPort) {
	_, sw := s.via(to)
	if err := sw.WriteSegs(hdrs, DataHeaderLen, bodies, to); err != nil {
		if n := s.st.werr.Add(1); n == 1 || n%10000 == 0 {
			s.cfg.Logger.Warn("udp: send failed", "peer", to, "bytes", bytes, "datagrams", len(bodies), "errors", n, "err", err)
		}
		return
	}
	s.st.writes.Add(1)
	s.st.datagrams.Add(uint64(len(bodies)))
	s.st.bytes.Add(uint64(bytes))
}

// writeAll sends b to every static and learned destination (mu held).
func (s *Sender) writeAll(b []byte) {
	for _, p := range s.dests {
		s.write(b, p)
	}
	for i := range s.learned {
		s.write(b, s.learned[i].addr)
	}
}

// Destinations returns the static and currently learned destinations.
func (s *Sender) Destinations() []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]netip.AddrPort(nil), s.dests...)
	for _, l := range s.learned {
		out = append(out, l.addr)
	}
	return out
}

// publishLocked sends message seq+1 (already in its history slot) with the
// send stamps taken by the caller at Send/Publish entry.
func (s *Sender) publishLocked(n int, mono, other int64) error {
	s.seq++
	s.pubBytes += int64(n)
	h := &s.hist[(s.seq-1)%uint64(len(s.hist))]
	h.seq, h.n = s.seq, n
	h.hdr = MsgHeader{Seq: s.seq, SendMono: mono, SendClock: other, Clock: s.cfg.Clock, Version: s.cfg.HeaderVersion}
	s.st.published.Add(1)
	if s.cfg.BatchBytes > 0 && BatchHeaderLen+RecordHeaderLen+n <= s.cfg.BatchBytes {
		if !s.batch.Fits(n) {
			s.flushLocked()
		}
		s.batch.Append(&Record{MsgHeader: h.hdr, Payload: h.buf[:n]})
		if s.batch.Count() == 1 {
			s.batchAt = s.now()
			s.btim.arm(s.cfg.BatchDelay)
		}
		if !s.batch.Fits(0) {
			s.flushLocked()
		}
		return nil
	}
	s.flushLocked() // keep order: older batched messages first
	frags := s.sendMessage(h, 0, uint32(FragCountFor(n, s.cfg.FragSize)), false, netip.AddrPort{})
	if s.cfg.Reliable && frags > 1 {
		s.heartbeatLocked() // reveals tail loss without waiting a period
	}
	return nil
}

// sendMessage sends fragments [first, first+count) of h to every
// destination (or only to `to` when valid). Returns fragments sent.
func (s *Sender) sendMessage(h *histEntry, first, count uint32, retrans bool, to netip.AddrPort) int {
	fs := s.cfg.FragSize
	total := uint32(FragCountFor(h.n, fs))
	d := &s.data
	d.TopicID, d.Epoch, d.MsgHeader, d.Retransmit, d.KeepLast = s.cfg.TopicID, s.cfg.Epoch, h.hdr, retrans, s.cfg.KeepLast
	d.MsgLen, d.FragSize, d.FragCount = uint32(h.n), uint32(fs), total
	sent := 0
	end := min(uint64(first)+uint64(count), uint64(total))
	for f := uint64(first); f < end; {
		d.FragIndex = uint32(f)
		d.Payload = h.buf[int(f)*fs : min(int(f)*fs+fs, h.n)]
		k := 0
		if s.sw != nil {
			k = int(min(end-f, uint64(s.segRun)))
		}
		if k > 1 || (k == 1 && len(d.Payload) >= vecMin) {
			// Straight from the history, headers in segHdr: a run of
			// fragments in one call (all full-size but possibly the
			// message's last, as segmentation needs), or a lone large one
			// in two iovecs.
			bytes := 0
			for i := range k {
				off := int(f+uint64(i)) * fs
				d.FragIndex = uint32(f) + uint32(i)
				d.Payload = h.buf[off:min(off+fs, h.n)]
				m, err := d.MarshalHeaderTo(s.segHdr[i*DataHeaderLen:])
				if err != nil { // cannot happen: the sizes were checked at Send
					k = i
					break
				}
				s.segBody[i] = d.Payload
				bytes += m
			}
			if k > 0 {
				s.paceFor(bytes, to)
				s.writeSegs(s.segHdr, s.segBody[:k], bytes, to)
				sent += k
			}
			clear(s.segBody[:max(k, 1)])
			f += uint64(max(k, 1))
			continue
		}
		f++
		m, err := d.MarshalBinaryTo(s.scratch)
		if err == nil {
			m, err = s.seal(s.scratch, m)
		}
		if err != nil {
			continue
		}
		s.paceFor(m, to)
		if to.IsValid() {
			s.write(s.scratch[:m], to)
		} else {
			s.writeAll(s.scratch[:m])
		}
		sent++
	}
	d.Payload = nil
	return sent
}

// pace takes n bytes from the token bucket, sleeping (mu held: a paced
// publisher is busy sending, as it is while writing) when the bucket is
// more than paceSlack in debt.
func (s *Sender) pace(n int64) {
	now := s.now()
	// Elapsed time beyond what fills the bucket adds nothing (and capping
	// it keeps elapsed × rate from overflowing after a long idle).
	full := int64(s.cfg.PaceBurst) * 1e9 / s.cfg.PaceRate
	s.tokens = min(s.tokens+min(now-s.paceAt, full+1)*s.cfg.PaceRate/1e9, int64(s.cfg.PaceBurst))
	s.paceAt = now
	s.tokens -= n
	if s.tokens >= -s.paceSlack {
		return
	}
	d := time.Duration(-s.tokens * 1e9 / s.cfg.PaceRate)
	time.Sleep(d)
	s.paced.Add(int64(d))
}

// Flush sends the open batch now.
func (s *Sender) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.flushLocked()
	return nil
}

func (s *Sender) flushLocked() {
	if s.bbuf == nil || s.batch.Count() == 0 {
		return
	}
	b := s.batch.Finish(s.cfg.TopicID, s.cfg.Epoch)
	n, err := s.seal(s.bbuf[:cap(s.bbuf)], len(b))
	if err == nil {
		s.writeAll(s.bbuf[:n])
	}
	s.st.batches.Add(1)
	s.st.batched.Add(uint64(s.batch.Count()))
	s.batch.Reset(s.bbuf)
	s.batchAt = -1
}

func (s *Sender) heartbeatLocked() {
	s.hb = Heartbeat{TopicID: s.cfg.TopicID, Epoch: s.cfg.Epoch, FirstSeq: s.oldestLocked(), LastSeq: s.seq}
	if n, ok := s.heartbeatBytes(); ok {
		s.writeAll(s.scratch[:n])
		s.st.hbs.Add(1)
	}
}

// heartbeatBytes encodes s.hb into s.scratch, sealed in a keyed domain
// (mu held).
func (s *Sender) heartbeatBytes() (int, bool) {
	n, err := s.hb.MarshalBinaryTo(s.scratch)
	if err == nil {
		n, err = s.seal(s.scratch, n)
	}
	return n, err == nil
}

// seal authenticates the datagram b[:n] in a keyed domain (mu held); a
// no-op otherwise.
func (s *Sender) seal(b []byte, n int) (int, error) {
	if s.mac == nil {
		return n, nil
	}
	return s.mac.seal(b, n)
}

// oldestLocked is the oldest seq still in the history (mu held): one more
// while a loan (or a discarded one) holds that message's entry.
func (s *Sender) oldestLocked() uint64 {
	o := uint64(1)
	if s.seq > uint64(len(s.hist)) {
		o = s.seq - uint64(len(s.hist)) + 1
	}
	if o <= s.seq && s.hist[(o-1)%uint64(len(s.hist))].seq != o {
		o++
	}
	return o
}

// token is this publisher's token for a subscriber address: a keyed hash
// (random seed per sender), so it cannot be guessed by a source that
// never received the HEARTBEAT carrying it, like a SYN cookie. Non-zero.
func (s *Sender) token(a netip.AddrPort) uint64 {
	var b [18]byte
	ip := a.Addr().As16()
	copy(b[:], ip[:])
	b[16], b[17] = byte(a.Port()>>8), byte(a.Port())
	return maphash.Bytes(s.tseed, b[:]) | 1
}

// isStatic reports whether from is one of the configured unicast peers:
// their addresses are trusted from the start (the contract names them).
func (s *Sender) isStatic(from netip.AddrPort) bool {
	for _, p := range s.cfg.Peers {
		if p == from {
			return true
		}
	}
	return false
}

// Echo replies (HEARTBEATs answering challenges) are limited per peer and
// cookie: (peer, cookie) pairs hash into echoSlots buckets, each answered
// at most once per echoGap. Every echo answers one ACKNACK that is at least as long
// (48 bytes against 52, both plus the same trailer when keyed), so a
// forged source draws at most ~1.1× what it sends, and at most
// echoSlots/echoGap replies per second in all.
const (
	echoSlots = 64
	echoGap   = time.Millisecond
)

// echo answers an ACKNACK's challenge (or tells an unproven subscriber its
// token): one unicast HEARTBEAT with the cookie and the token.
func (s *Sender) echo(a *AckNack, to netip.AddrPort, now int64) {
	tok := s.token(to)
	// Per (peer, cookie): subscribers of one group share their source
	// address (the group port), and each needs its own echo.
	slot := &s.echoAt[(tok^a.Cookie)%echoSlots]
	if *slot != 0 && now-*slot < int64(echoGap) {
		s.st.echoLimited.Add(1)
		return
	}
	*slot = now
	s.hb = Heartbeat{TopicID: s.cfg.TopicID, Epoch: s.cfg.Epoch, FirstSeq: s.oldestLocked(), LastSeq: s.seq, Echo: a.Cookie, Token: tok}
	if n, ok := s.heartbeatBytes(); ok {
		// Counted before it leaves: whoever sees the stream confirmed by
		// this echo then also sees it counted (TestConnectedRouteCarriesTheStream
		// read Echoes 0 after the receiver had confirmed).
		s.st.echoes.Add(1)
		s.write(s.scratch[:n], s.echoDest(to))
	}
}

// echoDest is where the echo to subscriber `to` goes: unicast to a known
// unicast destination, else to the multicast group when there is one —
// several subscribers of a group may share its port, and a unicast
// datagram to that port reaches only one of them — else unicast (mu held).
func (s *Sender) echoDest(to netip.AddrPort) netip.AddrPort {
	var group netip.AddrPort
	for _, d := range s.dests {
		if d == to {
			return to
		}
		if d.Addr().IsMulticast() {
			group = d
		}
	}
	for i := range s.learned {
		if s.learned[i].addr == to {
			return to
		}
	}
	if group.IsValid() {
		return group
	}
	return to
}

// Close flushes the open batch, stops the goroutine and closes the socket.
// Idempotent.
func (s *Sender) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.flushLocked()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		err = s.conn.Close()
		for _, rt := range s.routes {
			err = errors.Join(err, rt.conn.Close())
		}
		if s.btim != nil {
			_ = s.btim.close()
		}
		s.wg.Wait()
	})
	return err
}

func (s *Sender) loop() {
	defer s.wg.Done()
	nextHB := s.now()
	var check time.Duration // the last sleep that ended with the sender still active
	for {
		now := s.now()
		s.mu.Lock()
		if now >= nextHB {
			s.heartbeatLocked()
			s.minAck(now)
			s.pruneLearnedLocked(now)
			nextHB = now + int64(s.cfg.HeartbeatPeriod)
		}
		if s.dc == nil {
			_ = s.conn.SetReadDeadline(s.base.Add(time.Duration(nextHB)))
		}
		s.mu.Unlock()
		if s.dc != nil {
			if active, d := s.lease.active(now); active {
				// A sender reads the socket: come back for the next
				// heartbeat, or when its lease ends. While it stays
				// active, look twice as late each time, up to
				// leaseCheckMax: a sender publishing without pause would
				// otherwise wake this goroutine every senderLease, and on
				// CPUs the application keeps busy each wake-up is felt
				// in its latency tail (docs/udp.md, "Publisher: who reads
				// acknowledgements").
				d = max(d, min(2*check, leaseCheckMax))
				d = max(min(d, time.Duration(nextHB-now)), time.Millisecond)
				check = d
				if !s.lease.pause(d, s.done) {
					return
				}
				continue
			}
			check = 0
			if !s.rmu.TryLock() {
				continue // a sender just took it; lease.active now says so
			}
			if active, _ := s.lease.active(s.now()); active {
				s.rmu.Unlock()
				continue
			}
			_ = s.conn.SetReadDeadline(s.base.Add(time.Duration(nextHB)))
			// A sender that arrives from here on sets want and then
			// pushes the deadline into the past, ending the read below.
			if s.lease.want.Load() {
				s.rmu.Unlock()
				continue
			}
		}
		listen := s.now()
		n, from, _, err := s.conn.ReadFrom(s.rbuf)
		if s.dc != nil {
			s.rmu.Unlock() // rbuf and an are the goroutine's own
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.mu.Lock()
			s.heardUpTo = max(s.heardUpTo, listen)
			s.mu.Unlock()
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-s.done:
				return
			default:
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.cfg.Logger.Warn("udp: receive error", "local", s.conn.LocalAddr(), "err", err)
			}
			continue
		}
		s.control(s.rbuf[:n], from)
	}
}

// senderLease is how long after a sender's last inline read the control
// goroutine leaves the socket alone; inlineEvery is how often a sender
// whose window is open reads anyway (so NACKs are answered while it
// sends); inlineMax bounds the datagrams one inline read takes.
//
// leaseCheckMax bounds how long the control goroutine stays away while a
// sender keeps its lease: the longest a sender that stops after sending
// without pause leaves NACKs and subscribers' heartbeat answers unread
// (senderLease after a pause, or after sending at a rate that let the
// lease lapse in between). It is the receiver's consumerLease too.
const (
	senderLease   = 5 * time.Millisecond
	leaseCheckMax = 40 * time.Millisecond
	inlineEvery   = time.Millisecond
	inlineMax     = 64
)

// readInline reads the socket on the caller's thread (mu not held): up to
// wait for a first datagram, then whatever is queued, until the window
// admits need (every live subscriber acknowledged it) or the socket is
// empty. Each ACKNACK is applied under mu as the goroutine would. An
// empty socket advances heardUpTo, so a dead subscriber is still found
// while the sender waits. Blocks up to wait; Close ends it at once.
func (s *Sender) readInline(wait time.Duration, need uint64) {
	s.lease.take(&s.rmu, s.conn)
	for range inlineMax {
		listen := s.now()
		n, from, _, err := s.dc.ReadDirect(s.ibuf, wait)
		if err != nil {
			if err == errWouldBlock {
				s.mu.Lock()
				s.heardUpTo = max(s.heardUpTo, listen)
				s.mu.Unlock()
			} else if !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Warn("udp: receive error", "local", s.conn.LocalAddr(), "err", err)
			}
			break
		}
		wait = 0 // then only what is already queued
		ctr, ok := s.parseControl(s.ibuf[:n], from, &s.ian, s.ivmac)
		if !ok {
			continue
		}
		s.st.acksInline.Add(1)
		now := s.now()
		s.mu.Lock()
		open := s.closed
		if !s.closed {
			s.applyControl(&s.ian, from, ctr, now)
			open = s.minAck(now) >= need
		}
		s.mu.Unlock()
		if open {
			break
		}
	}
	s.lease.release(&s.rmu, s.now())
}

// batchLoop flushes a batch BatchDelay after its first message.
func (s *Sender) batchLoop() {
	defer s.wg.Done()
	for s.btim.wait() == nil {
		s.mu.Lock()
		if s.batchAt >= 0 {
			if left := int64(s.cfg.BatchDelay) - (s.now() - s.batchAt); left > 0 {
				s.btim.arm(time.Duration(left)) // batch reopened since arming
			} else {
				s.flushLocked()
			}
		}
		s.mu.Unlock()
	}
}

func (s *Sender) allowed(from netip.AddrPort) bool {
	if len(s.cfg.AllowFrom) == 0 {
		return true
	}
	for _, p := range s.cfg.Peers {
		if p.Addr() == from.Addr() {
			return true
		}
	}
	for _, p := range s.cfg.AllowFrom {
		if p.Contains(from.Addr()) {
			return true
		}
	}
	return false
}

// control handles one datagram on the publisher's socket.
func (s *Sender) control(b []byte, from netip.AddrPort) {
	ctr, ok := s.parseControl(b, from, &s.an, s.vmac)
	if !ok {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.applyControl(&s.an, from, ctr, now)
}

// parseControl validates datagram b from `from` and decodes it into a
// (verifying it with vmac in a keyed domain). false: not an ACKNACK of
// this topic and epoch (counted). Touches no state guarded by mu; a and
// vmac belong to the caller's reader (the goroutine's or the sender's).
func (s *Sender) parseControl(b []byte, from netip.AddrPort, a *AckNack, vmac *mac) (ctr uint64, ok bool) {
	if !s.allowed(from) {
		s.st.unknownSource.Add(1)
		return 0, false
	}
	c, err := Parse(b)
	if err != nil {
		s.st.malformed.Add(1)
		return 0, false
	}
	if c.Kind != KindAckNack {
		return 0, false // our own multicast looped back, or an announce
	}
	if vmac != nil || c.Auth {
		ok := false
		if vmac != nil && c.Auth {
			ctr, ok = vmac.verify(b)
		}
		if !ok {
			s.st.unauth.Add(1)
			return 0, false
		}
		b = c.body(b)
	}
	if c.TopicID != s.cfg.TopicID || c.Epoch != s.cfg.Epoch {
		s.st.stale.Add(1)
		return 0, false
	}
	if err := a.decode(c, b); err != nil {
		s.st.malformed.Add(1)
		return 0, false
	}
	s.st.acks.Add(1)
	if a.N > 0 {
		s.st.nacks.Add(1)
	}
	return ctr, true
}

// applyControl acts on a decoded ACKNACK (mu held): echo, window,
// retransmissions.
func (s *Sender) applyControl(a *AckNack, from netip.AddrPort, ctr uint64, now int64) {
	proven := s.isStatic(from) || a.Token == s.token(from)
	if a.Challenge || !proven {
		s.echo(a, from, now)
	}
	if !proven {
		// Possibly a spoofed source: it gets the echo (carrying the token
		// it must return), nothing else — no retransmission to it, and it
		// does not join the send window.
		s.st.unproven.Add(1)
		return
	}
	sub := s.subscriber(from, now)
	if sub != nil && s.vmac != nil && !sub.rw.accept(ctr) {
		s.st.replayed.Add(1)
		return
	}
	if sub != nil {
		if a.Ack > sub.ack && a.Ack <= s.seq {
			sub.ack, sub.ackAt = a.Ack, now
		}
		if sub.lagging && sub.ack+uint64(len(s.hist)) > s.seq {
			// It acknowledged the window's start: the next send need
			// not wait for it, so it may hold the window again.
			sub.lagging = false
		}
		sub.lastSeen, sub.heard = now, true
		select {
		case s.ackCh <- struct{}{}:
		default:
		}
	}
	if !s.cfg.Reliable {
		return
	}
	oldest := s.oldestLocked()
	gone := false
	for i := 0; i < a.N; i++ {
		e := a.Entries[i]
		if e.Seq > s.seq {
			continue
		}
		if e.Seq < oldest {
			gone = true
			continue
		}
		h := &s.hist[(e.Seq-1)%uint64(len(s.hist))]
		if h.seq != e.Seq {
			gone = true
			continue
		}
		cnt := e.FragCount
		if cnt == 0 {
			cnt = ^uint32(0)
		}
		if sub == nil {
			continue // no budget to account it against (table full)
		}
		if cnt = s.retransAllowed(sub, h, e.FragFirst, cnt, now); cnt > 0 {
			s.st.retrans.Add(uint64(s.sendMessage(h, e.FragFirst, cnt, true, from)))
		}
	}
	if gone {
		// Tell this subscriber where the history starts now.
		s.hb = Heartbeat{TopicID: s.cfg.TopicID, Epoch: s.cfg.Epoch, FirstSeq: oldest, LastSeq: s.seq}
		if n, ok := s.heartbeatBytes(); ok {
			s.write(s.scratch[:n], from)
		}
	}
}

// subscriber finds or learns the subscriber at addr.
func (s *Sender) subscriber(addr netip.AddrPort, now int64) *subState {
	for i := range s.subs {
		if s.subs[i].addr == addr {
			return &s.subs[i]
		}
	}
	if len(s.subs) == cap(s.subs) {
		return nil
	}
	// Start its window at the oldest message we still hold: it acks from
	// there.
	ack := uint64(0)
	if s.seq > uint64(len(s.hist)) {
		ack = s.seq - uint64(len(s.hist))
	}
	s.subs = append(s.subs, subState{addr: addr, ack: ack, lastSeen: now, ackAt: now, credit: s.retransBurst(), creditAt: s.pubBytes, creditTime: now})
	s.st.live.Store(uint64(len(s.subs)))
	return &s.subs[len(s.subs)-1]
}

// pruneLearnedLocked forgets destinations not announced for LearnTTL
// (mu held).
func (s *Sender) pruneLearnedLocked(now int64) {
	for i := 0; i < len(s.learned); i++ {
		if now-s.learned[i].lastSeen > int64(s.cfg.LearnTTL) {
			s.cfg.Logger.Info("udp: learned subscriber no longer announced", "peer", s.learned[i].addr)
			s.learned = append(s.learned[:i], s.learned[i+1:]...)
			i--
		}
	}
}

// LearnAnnounce adds the subscriber announced in e (from the ANNOUNCE
// datagram's source `from`) as a destination when it announces this
// topic from an allowed source, or refreshes it; it is forgotten after
// LearnTTL without another announce. At most MaxSubscribers are learned.
// Safe concurrently (the node's Announcer calls it).
func (s *Sender) LearnAnnounce(from netip.AddrPort, e *AnnounceEntry) {
	if e.Role != RoleSubscriber || e.TopicID != s.cfg.TopicID || !s.allowed(from) {
		return
	}
	addr := from.Addr()
	if e.Addr != [4]byte{} {
		addr = netip.AddrFrom4(e.Addr)
	}
	dst := netip.AddrPortFrom(addr, e.Port)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.now()
	for _, d := range s.dests {
		if d == dst {
			return
		}
	}
	for i := range s.learned {
		if s.learned[i].addr == dst {
			s.learned[i].lastSeen = now
			return
		}
	}
	if len(s.learned) < s.cfg.MaxSubscribers {
		s.learned = append(s.learned, learnedDest{addr: dst, lastSeen: now})
		s.cfg.Logger.Info("udp: subscriber learned from announce", "peer", dst, "topic_id", s.cfg.TopicID)
	}
}

// stallSlots and stallMemory size the stall history: source addresses
// hash into stallSlots marks, and a mark older than stallMemory
// StallTimeouts is forgotten.
const (
	stallSlots  = 64
	stallMemory = 64
)

// stall takes out of the send window every subscriber that has held it
// shut (its ack below need) without acknowledging anything for its stall
// allowance while a send waited since start (mu held); true if it took
// one out. The allowance is StallTimeout, halved for each stall of the
// same source address within stallMemory×StallTimeout, so a reader that
// never acknowledges, or rejoins only to stall again, holds the stream at
// most 2×StallTimeout in that time (issue 31, finding 3: an outsider that
// had answered the challenge once held ack 0 and cut a 500 Hz stream to
// 178 messages in 10 s, with 10 send timeouts). Contract peers (Peers)
// are not taken out here: the contract makes the publisher wait for them
// (up to SendTimeout per send, until SubscriberTimeout of silence), and a
// real one repairing 1 MiB messages across a lossy veth under load can
// go longer than StallTimeout without acknowledging
// (TestReliable1MiBMaxRateAcrossNamespaces lost messages when they were).
func (s *Sender) stall(need uint64, start, now int64) bool {
	took := false
	for i := range s.subs {
		sub := &s.subs[i]
		if sub.lagging || sub.ack >= need || sub.static {
			continue
		}
		m := &s.stallHist[s.addrHash(sub.addr)%stallSlots]
		if m.n > 0 && now-m.at > stallMemory*int64(s.cfg.StallTimeout) {
			m.n = 0
		}
		if now-max(start, sub.ackAt) < int64(s.cfg.StallTimeout>>min(m.n, 20)) {
			continue
		}
		sub.lagging, took = true, true
		m.n++
		m.at = now
		s.st.stalled.Add(1)
		s.cfg.Logger.Warn("udp: subscriber taken out of the send window: it held the window without acknowledging",
			"peer", sub.addr, "ack", sub.ack, "need", need, "stalls", m.n)
	}
	return took
}

// addrHash hashes a source address (not its port: one host's ports share
// a stall history) with the sender's seed.
func (s *Sender) addrHash(a netip.AddrPort) uint64 {
	ip := a.Addr().As16()
	return maphash.Bytes(s.tseed, ip[:])
}

// retransBurst is the retransmission budget a subscriber starts with and
// can save up: one history of the largest messages.
func (s *Sender) retransBurst() int64 {
	return int64(len(s.hist)) * int64(max(s.cfg.MaxPayload, 1))
}

// retransAllowed is how many of the cnt fragments from first of h the
// subscriber's budget lets the sender retransmit, taken from the budget
// (mu held). The budget earns one byte per byte published and one
// history per StallTimeout, and holds one history at most, so a
// subscriber, whatever it asks for, is sent at most one history at once,
// one more per StallTimeout, and as many bytes again as the stream
// published (issue 31, finding 3: 1.82 MB of ACKNACKs drew 905 MB,
// 497×). A genuine subscriber asks each lost fragment about once; the
// time share keeps one whose window is shut on a repair (nothing
// published, nothing earned) from waiting into its stall bound.
func (s *Sender) retransAllowed(sub *subState, h *histEntry, first, cnt uint32, now int64) uint32 {
	fs := int64(s.cfg.FragSize)
	total := int64(FragCountFor(h.n, s.cfg.FragSize))
	end := min(int64(first)+int64(cnt), total)
	if int64(first) >= end {
		return 0
	}
	burst, per := s.retransBurst(), int64(s.cfg.StallTimeout)
	byTime := int64(float64(burst) * float64(min(now-sub.creditTime, per)) / float64(per))
	sub.credit = min(sub.credit+s.pubBytes-sub.creditAt+byTime, burst)
	sub.creditAt, sub.creditTime = s.pubBytes, now
	bytesOf := func(e int64) int64 { return min(e*fs, int64(h.n)) - int64(first)*fs }
	want := bytesOf(end)
	if want > sub.credit {
		// Whole fragments only, as far as the budget reaches.
		e := int64(first) + sub.credit/fs
		s.st.retransLimited.Add(uint64(want - bytesOf(max(e, int64(first)))))
		end = e
	}
	if end <= int64(first) {
		return 0
	}
	sub.credit -= bytesOf(end)
	return uint32(end - int64(first))
}
