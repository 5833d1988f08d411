package udp

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ReceiverConfig configures a Receiver. Zero durations and sizes take the
// documented defaults (see withDefaults).
type ReceiverConfig struct {
	TopicID    uint32
	MaxPayload int  // largest message accepted, bytes (≤ MaxPayload)
	Reliable   bool // NACK gaps and deliver in order
	// Depth is the contract's history depth: a stream first seen at a
	// sequence ≤ Depth starts at 1 (the publisher still holds the start, and
	// in best effort the first messages count as lost if they never come).
	// Default 16, the Sender's default reliable depth.
	Depth int
	// KeepLast (reliable only) declares a keep-last publisher
	// (SenderConfig.KeepLast) of this Depth: a message s then tells the
	// receiver that everything before s−Depth+1 is gone (counted lost at
	// once, without a NACK round trip). How the receiver acknowledges
	// follows each publisher's own mode, which its DATA and BATCH
	// datagrams carry (FlagKeepLast), not this field: a keep-last
	// publisher only in answer to heartbeats, a send window every Depth/2
	// messages as well (else the window would wait for a heartbeat).
	// KeepLast only sets the mode assumed for a stream before its first
	// datagram.
	KeepLast bool
	// Queue (best effort only) bounds the completed messages waiting for
	// the consumer: when one more completes, the oldest waiting ones are
	// discarded (Dropped) so that at most Queue wait, and their loss is
	// reported with the next delivery (Delivery.Lost, Lost), as a
	// keep-last reader history of depth Queue does. Messages completed
	// by the same datagram (a BATCH) are never discarded for each other,
	// only for a later datagram. 0: no bound but the reassembly pool (a
	// standing queue of up to Slots messages when the consumer is slow).
	// The middleware sets the contract's depth (docs/udp.md, "Best effort:
	// a bounded queue"). Ignored when Reliable.
	Queue int
	// ReassemblyBytes bounds the reassembly pool: it holds
	// ReassemblyBytes/MaxPayload slots (2..4096), each MaxPayload bytes plus
	// a fragment bitmap, allocated on first use and never more. Default
	// max(4×MaxPayload, 1 MiB), in reliable mode at least Depth×MaxPayload,
	// capped at 256 MiB.
	ReassemblyBytes int
	// ReassemblyTimeout is how long an incomplete message (best effort) or
	// an unfilled gap announced by a heartbeat may wait before it is counted
	// lost. Default 200 ms.
	ReassemblyTimeout time.Duration
	// NackDelay is how long a gap must persist before the first NACK
	// (tolerates reordering). Default 1 ms.
	NackDelay time.Duration
	// NackInterval is the minimum spacing of NACKs for one stream: about
	// the time a retransmission takes to arrive. Default 10 ms.
	NackInterval time.Duration
	// NackRetry is how long a NACKed fragment waits before it is NACKed
	// again (its retransmission may queue behind a burst). Default
	// 4×NackInterval.
	NackRetry time.Duration
	// Tick is the housekeeping period while work is pending. Default 1 ms.
	Tick time.Duration
	// AllowFrom, when non-empty, is the set of source prefixes accepted;
	// datagrams from elsewhere are dropped and counted as UnknownSource.
	AllowFrom []netip.Prefix
	// MaxWriters bounds the publisher streams (epochs) tracked at once.
	// Default 4.
	MaxWriters int
	// WriterTimeout is the silence after which a stream is forgotten and its
	// slots freed. Default 3 s.
	WriterTimeout time.Duration
	// Key, when set, authenticates every datagram (docs/udp.md,
	// "Authentication"): datagrams without a valid tag are dropped and
	// counted (Unauthenticated), replayed ones too (Replayed). nil: an
	// unauthenticated domain.
	Key    *Key
	Logger *slog.Logger
}

func (c *ReceiverConfig) withDefaults() (ReceiverConfig, error) {
	o := *c
	if o.MaxPayload < 0 || o.MaxPayload > MaxPayload {
		return o, fmt.Errorf("%w: MaxPayload %d outside 0..%d", ErrConfig, o.MaxPayload, MaxPayload)
	}
	if o.Depth <= 0 {
		o.Depth = 16
	}
	if !o.Reliable {
		o.KeepLast = false
	}
	if o.Queue < 0 {
		return o, fmt.Errorf("%w: Queue %d negative", ErrConfig, o.Queue)
	}
	if o.Reliable {
		o.Queue = 0
	}
	if o.ReassemblyBytes == 0 {
		o.ReassemblyBytes = max(4*o.MaxPayload, 1<<20)
		if o.Reliable {
			// Hold the publisher's whole send window (Depth messages):
			// a smaller pool drops the window's tail as overruns, which
			// then cost a retransmission each.
			o.ReassemblyBytes = max(o.ReassemblyBytes, o.Depth*max(o.MaxPayload, 1))
		}
		o.ReassemblyBytes = min(o.ReassemblyBytes, 256<<20)
	}
	if o.ReassemblyTimeout == 0 {
		o.ReassemblyTimeout = 200 * time.Millisecond
	}
	if o.NackDelay == 0 {
		o.NackDelay = time.Millisecond
	}
	if o.NackInterval == 0 {
		o.NackInterval = 10 * time.Millisecond
	}
	if o.NackRetry == 0 {
		o.NackRetry = 4 * o.NackInterval
	}
	if o.Tick == 0 {
		o.Tick = time.Millisecond
	}
	if o.MaxWriters == 0 {
		o.MaxWriters = 4
	}
	if o.WriterTimeout == 0 {
		o.WriterTimeout = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// ReceiverStats are cumulative counters, safe to read concurrently.
type ReceiverStats struct {
	Datagrams, Bytes   uint64 // datagrams read from the socket and their bytes
	Malformed          uint64 // failed validation (magic, version, length, CRC, fields)
	UnknownTopic       uint64 // valid datagram of another topic
	UnknownSource      uint64 // from an address outside AllowFrom
	Forged             uint64 // known epoch from another source address
	Duplicates         uint64 // fragments or messages already received
	Overruns           uint64 // reliable: beyond the reassembly window, dropped (NACKed later)
	PoolExhausted      uint64 // no reassembly slot free, dropped
	Evicted            uint64 // best effort: incomplete message evicted for a newer one
	ReassemblyTimeouts uint64 // incomplete messages given up
	NacksSent          uint64 // ACKNACK datagrams with at least one entry
	AcksSent           uint64 // ACKNACK datagrams sent in total
	Delivered          uint64 // messages handed to the caller
	Lost               uint64 // messages missed by sequence gap
	Epochs             uint64 // publisher streams seen after the first (restarts)
	UnknownWriter      uint64 // new epoch dropped: writer table full of live streams
	RxStamped          uint64 // datagrams carrying a kernel receive timestamp
	StackDelaySum      uint64 // Σ(read time − kernel rx time), ns, CLOCK_REALTIME
	StackDelayMax      uint64 // max of the above, ns
	PoolBytes          uint64 // reassembly bytes allocated so far
	PoolLimit          uint64 // the configured bound on PoolBytes
	// Unconfirmed counts messages completed by writers that were not (yet)
	// confirmed and were discarded undelivered: their slot was reclaimed,
	// or the writer never answered the challenge (forged or spoofed). For a
	// writer confirmed later, its discarded messages are in Lost as well.
	Unconfirmed uint64
	// Confirmed counts writers confirmed by the challenge handshake.
	Confirmed uint64
	// Challenges counts challenge ACKNACKs sent to unconfirmed writers.
	Challenges uint64
	// Unauthenticated counts datagrams dropped for a missing or invalid
	// tag (a keyed receiver), or for carrying one without a key here.
	Unauthenticated uint64
	// Replayed counts authenticated datagrams whose counter was seen
	// before (or is older than the replay window) for their writer.
	Replayed uint64
	// Dropped counts completed best-effort messages discarded undelivered
	// because Queue newer ones completed while they waited (also in Lost).
	Dropped uint64
	// SocketDrops is how many datagrams the kernel dropped at the socket
	// (its receive buffer full: best effort, a publisher faster than the
	// depth allows; reliable, repaired by NACK), read from the Conn when
	// Stats is called (Socket.Drops; 0 for a Conn that cannot say).
	// Best-effort messages they belonged to are also in Lost, by their
	// sequence gap.
	SocketDrops uint64
}

// Delivery is one received message as handed to Next's callback. Payload
// is valid only during the callback.
type Delivery struct {
	TopicID, Epoch uint32
	MsgHeader
	Payload []byte
	Lost    uint64 // messages missed just before this one
	// KernelRx is the SO_TIMESTAMPNS time (ns, CLOCK_REALTIME) of the
	// datagram that completed the message, 0 if none; ReadRx is when the
	// receive goroutine read it (ns, CLOCK_REALTIME). ReadRx−KernelRx is the
	// network-stack time.
	KernelRx, ReadRx int64
}

const (
	slotFree uint8 = iota
	slotFilling
	slotComplete
	slotReady
	// slotHeld: complete and in order, but its writer is not confirmed
	// yet: it waits in the stream's heldQ, to be handed out on
	// confirmation or discarded with the stream.
	slotHeld
)

type slot struct {
	buf       []byte
	bits      []uint64
	nbits     []uint64 // fragments NACKed since nackedAt
	nackedAt  int64
	state     uint8
	stream    int
	seq       uint64
	hdr       MsgHeader
	epoch     uint32
	msgLen    uint32
	fragSize  uint32
	fragCount uint32
	got       uint32
	maxFrag   uint32 // highest fragment index received + 1
	started   int64  // ns since Receiver.base
	kernelRx  int64
	readRx    int64
	lost      uint64
}

// nackMark records when a message was NACKed whole.
type nackMark struct {
	seq uint64
	at  int64
}

type stream struct {
	used       bool
	epoch      uint32
	src        netip.AddrPort
	next       uint64 // next seq to deliver
	high       uint64 // highest seq seen
	win        []int32
	lastActive int64
	hbFirst    uint64
	hbLast     uint64
	hbLastAt   int64 // when hbLast last grew
	gapSince   int64 // reliable: when the current gap was first seen, -1 none
	lastNack   int64
	pendLost   uint64 // lost seqs to report on the next delivery
	unacked    int    // reliable: deliveries since the last ACKNACK
	ackDue     bool   // reliable: an acknowledgement waits for flushAcks
	// keepLast is the publisher's mode as its latest DATA or BATCH said
	// (FlagKeepLast); ReceiverConfig.KeepLast until one came.
	keepLast  bool
	created   int64
	delivered uint64
	// hbAt is when the stream's latest heartbeat arrived (-1 none) and
	// hbGap the longest interval between two of its heartbeats: the
	// publisher's heartbeat period as seen here, upper-bounded by what
	// arrived. A stream silent for several of them has most likely been
	// superseded (its publisher restarted under a new epoch), which lets a
	// full writer table make room for the new epoch at once instead of
	// after WriterTimeout.
	hbAt, hbGap int64
	// wholeNack[seq&mask] is when seq was last NACKed as a whole message
	// (no fragment of it held, so no per-fragment NACK bits): it is not
	// asked for again before NackRetry, like a fragment. Re-asking every
	// NackInterval retransmitted whole 1 MiB messages that were still on
	// their way, which overflowed the socket buffer and fed a storm.
	wholeNack []nackMark
	// The confirmation handshake (docs/udp.md, "Confirmed writers"): a
	// new stream is unconfirmed until its source echoes cookie in a
	// unicast HEARTBEAT; until then nothing of it is delivered or NACKed,
	// and its slots count against the unconfirmed share of the pool.
	confirmed bool
	cookie    uint64 // random, non-zero
	token     uint64 // the publisher's token for us (from the echo)
	chalAt    int64  // when the last challenge went out, -1 none
	held      int    // slots held (filling, complete or in heldQ, not yet handed out)
	heldQ     []int32
	rw        replayWindow
}

// Receiver is the receiving side of one topic. A goroutine it owns reads
// the socket, validates, reassembles and answers heartbeats; Next hands
// completed messages to the caller. Next must be called from one goroutine
// at a time; Stats is safe concurrently.
type Receiver struct {
	cfg   ReceiverConfig
	conn  Conn
	base  time.Time
	slots []slot
	ready chan int32
	free  chan int32
	done  chan struct{}
	intr  chan struct{}
	// ended is set by Close and Interrupt before they close done or
	// intr: readLocked checks it for every datagram, where a select on
	// the two channels took both channels' locks each time (9 % of a
	// 1 MiB round trip's CPU across a veth). Sequentially consistent; a
	// reader that misses it sees the channel closed on its next check.
	ended atomic.Bool
	wg    sync.WaitGroup
	once  sync.Once
	ionce sync.Once

	// Socket ownership (docs/udp.md, "Receive path"). mu guards the
	// socket's reads and all receive state below; whoever holds it reads.
	// A consumer in Next/TryNext reads directly on its own thread (dc); the
	// background goroutine reads through the netpoller only while no
	// consumer has read for consumerLease, so it keeps timers, heartbeats
	// and ACKNACKs going when nobody calls Next.
	dc       directConn // nil: conn has no direct read (fallback: goroutine only)
	mu       sync.Mutex
	lease    readLease // the consumer's hold on mu (consumerLease)
	nextTick int64
	deadline int64 // the read deadline the goroutine last set (0: unknown)
	// lastRx is the kernel receive stamp of the latest stamped datagram
	// and lastReadRx when it was read (CLOCK_REALTIME ns; mu).
	lastRx, lastReadRx int64
	// acksDue (mu) says some stream's ackDue is set; ackHint mirrors it
	// for Next, which checks it after a delivery without the lock.
	acksDue bool
	ackHint atomic.Bool

	// receive state (guarded by mu)
	streams   []stream
	mask      uint64
	seenAny   bool
	rbuf      []byte
	wbuf      []byte
	data      Data
	batch     BatchReader
	rec       Record
	hb        Heartbeat
	an        AckNack
	maxFrags  int
	poolBytes int
	srtt      int64 // smoothed NACK→retransmission delay, ns
	share     int   // slots all unconfirmed streams may hold together
	mac       *mac  // nil: unauthenticated domain
	cseed     maphash.Seed
	schal     [64]int64 // stateless challenges: when each hashed slot last sent

	st struct {
		datagrams, bytes, malformed, unknownTopic, unknownSource, forged, duplicates,
		overruns, exhausted, evicted, timeouts, nacks, acks, delivered, lost, epochs,
		unknownWriter, stamped, stackSum, stackMax, poolBytes, unconfirmed, confirmed,
		challenges, unauth, replayed, dropped atomic.Uint64
	}
	msg Delivery // Next's view, reused
	// newer is how many messages the datagram being handled completed
	// (mu): enqueue never discards those for each other. qbuf is
	// enqueue's scratch (Queue > 0 only).
	newer int
	qbuf  []int32
}

// NewReceiver starts a receiver on conn (which it owns and closes).
func NewReceiver(conn Conn, cfg ReceiverConfig) (*Receiver, error) {
	return newReceiver(conn, cfg, true)
}

// newReceiver builds a receiver; without start no goroutine reads conn
// (state-machine fuzzing drives handle and tick directly).
func newReceiver(conn Conn, cfg ReceiverConfig, start bool) (*Receiver, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	slotBytes := max(c.MaxPayload, 1)
	n := min(max(c.ReassemblyBytes/slotBytes, 2), 4096)
	r := &Receiver{cfg: c, conn: conn, base: time.Now(), done: make(chan struct{}), intr: make(chan struct{})}
	r.dc = asDirect(conn)
	r.lease.init(consumerLease)
	r.nextTick = int64(c.Tick)
	r.slots = make([]slot, n)
	r.ready = make(chan int32, n)
	r.free = make(chan int32, n)
	for i := range n {
		r.free <- int32(i)
	}
	w := 1 << bits.Len(uint(n-1))
	r.mask = uint64(w - 1)
	r.streams = make([]stream, c.MaxWriters)
	for i := range r.streams {
		r.streams[i].win = make([]int32, w)
		r.streams[i].wholeNack = make([]nackMark, w)
		r.streams[i].heldQ = make([]int32, 0, n)
	}
	r.maxFrags = FragCountFor(c.MaxPayload, MinFragSize)
	r.rbuf = make([]byte, MaxDatagram+1)
	r.wbuf = make([]byte, AckNackHeaderLen+MaxNackEntries*NackEntryLen+AuthLen)
	if c.Queue > 0 {
		r.qbuf = make([]int32, 0, n+1)
	}
	r.share = max(n/4, 1)
	r.cseed = maphash.MakeSeed()
	r.mac = c.Key.newMAC(uint64(time.Now().UnixNano()))
	if r.PoolLimit() <= 16<<20 {
		// Small pools are allocated up front so the receive path never
		// allocates, even on first use of a slot.
		for i := range r.slots {
			r.allocSlot(&r.slots[i])
		}
	}
	if start {
		r.wg.Add(1)
		go r.loop()
	}
	return r, nil
}

// PoolLimit is the reassembly memory bound in bytes (slots × (MaxPayload +
// bitmap)).
func (r *Receiver) PoolLimit() int {
	return len(r.slots) * (max(r.cfg.MaxPayload, 1) + 16*((r.maxFrags+63)/64))
}

// Slots is the number of reassembly slots.
func (r *Receiver) Slots() int { return len(r.slots) }

// LocalAddr is the socket's bound address.
func (r *Receiver) LocalAddr() netip.AddrPort { return r.conn.LocalAddr() }

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats {
	s := &r.st
	return ReceiverStats{
		Datagrams: s.datagrams.Load(), Bytes: s.bytes.Load(), Malformed: s.malformed.Load(),
		UnknownTopic: s.unknownTopic.Load(), UnknownSource: s.unknownSource.Load(), Forged: s.forged.Load(),
		Duplicates: s.duplicates.Load(), Overruns: s.overruns.Load(), PoolExhausted: s.exhausted.Load(),
		Evicted: s.evicted.Load(), ReassemblyTimeouts: s.timeouts.Load(), NacksSent: s.nacks.Load(),
		AcksSent: s.acks.Load(), Delivered: s.delivered.Load(), Lost: s.lost.Load(), Epochs: s.epochs.Load(),
		UnknownWriter: s.unknownWriter.Load(), RxStamped: s.stamped.Load(), StackDelaySum: s.stackSum.Load(),
		StackDelayMax: s.stackMax.Load(), PoolBytes: s.poolBytes.Load(), PoolLimit: uint64(r.PoolLimit()),
		Unconfirmed: s.unconfirmed.Load(), Confirmed: s.confirmed.Load(), Challenges: s.challenges.Load(),
		Unauthenticated: s.unauth.Load(), Replayed: s.replayed.Load(), Dropped: s.dropped.Load(),
		SocketDrops: socketDrops(r.conn),
	}
}

// socketDrops is conn's kernel drop count, 0 when it cannot say.
func socketDrops(conn Conn) uint64 {
	if d, ok := conn.(interface{ Drops() uint64 }); ok {
		return d.Drops()
	}
	return 0
}

// Next blocks until a message is complete (or ctx is done, or the receiver
// is closed: ErrClosed) and calls fn with it. The Delivery and its Payload
// are valid only during fn. On a Socket the caller's goroutine reads the
// socket itself while it waits (ppoll + recvmsg on its own thread), so the
// kernel wakes exactly the thread that delivers. ctx and Interrupt are
// noticed within maxSleep. 0 allocs.
func (r *Receiver) Next(ctx context.Context, fn func(*Delivery)) error {
	for {
		select {
		case idx := <-r.ready:
			r.deliver(idx, fn)
			r.flushAcksAfterDelivery()
			return nil
		default:
		}
		if r.dc == nil {
			return r.nextChan(ctx, fn)
		}
		if err := r.readDirect(ctx, true); err != nil {
			return err
		}
	}
}

// nextChan waits for the background goroutine (a Conn without direct reads).
func (r *Receiver) nextChan(ctx context.Context, fn func(*Delivery)) error {
	var idx int32
	select {
	case idx = <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return ErrClosed
	case <-r.intr:
		return ErrClosed
	}
	r.deliver(idx, fn)
	return nil
}

// TryNext is Next without waiting for the network: it reads what the socket
// already holds (busy polling, for the spin strategies) and returns false
// when no message is complete.
func (r *Receiver) TryNext(fn func(*Delivery)) bool {
	if r.dc != nil && len(r.ready) == 0 {
		// Non-blocking: nothing to cancel, so no caller context is needed.
		_ = r.readDirect(context.Background(), false)
	}
	select {
	case idx := <-r.ready:
		r.deliver(idx, fn)
		r.flushAcksAfterDelivery()
		return true
	default:
		return false
	}
}

// maxSleep bounds one blocking wait of a consumer, so that ctx, Interrupt
// and Close are noticed without a per-call wake-up mechanism (which would
// allocate); consumerLease is how long after a consumer's last read the
// background goroutine leaves the socket alone.
const (
	maxSleep      = 20 * time.Millisecond
	consumerLease = 2 * maxSleep
)

// readDirect takes the socket and reads on the caller's thread until a
// message is ready (block) or the socket is empty (!block), running the
// receive timers as they fall due. ctx may be nil when !block.
func (r *Receiver) readDirect(ctx context.Context, block bool) error {
	if r.lease.take(&r.mu, r.conn) {
		r.deadline = 0 // the goroutine must set its deadline again
	}
	err := r.readLocked(ctx, block)
	r.lease.release(&r.mu, r.now())
	return err
}

// readLocked is readDirect's loop (mu held). One clock read per datagram:
// the stamp taken after a read serves the next iteration too (what runs
// between, handle and timers, takes microseconds).
func (r *Receiver) readLocked(ctx context.Context, block bool) error {
	now := r.now()
	for {
		if r.ended.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.flushAcks(now)
		var wait time.Duration
		if block {
			until := now + int64(maxSleep)
			if r.pending() {
				until = min(until, r.nextTick)
			}
			wait = time.Duration(max(until-now, 1000))
		}
		n, from, rx, err := r.dc.ReadDirect(r.rbuf, wait)
		now = r.now()
		switch {
		case err == nil:
			r.handle(r.rbuf[:n], from, rx, now)
		case err == errWouldBlock:
		case errors.Is(err, net.ErrClosed):
			return ErrClosed
		default:
			r.cfg.Logger.Warn("udp: receive error", "local", r.conn.LocalAddr(), "err", err)
		}
		r.timers(now)
		if len(r.ready) > 0 || (!block && err != nil) {
			return nil
		}
	}
}

// timers runs the housekeeping tick when due (mu held). The announce is
// the node's (Announcer), not the receiver's.
func (r *Receiver) timers(now int64) {
	if now >= r.nextTick {
		r.flushAcks(now)
		r.tick(now)
		r.nextTick = now + int64(r.cfg.Tick)
	}
}

// directConn is a Conn the consumer can read on its own thread (*Socket).
type directConn interface {
	ReadDirect(b []byte, wait time.Duration) (int, netip.AddrPort, int64, error)
}

// Interrupt makes blocked and future Next calls return ErrClosed without
// closing the socket. Idempotent.
func (r *Receiver) Interrupt() {
	r.ionce.Do(func() {
		r.ended.Store(true)
		close(r.intr)
	})
}

// Interrupted reports whether Interrupt was called.
func (r *Receiver) Interrupted() bool {
	select {
	case <-r.intr:
		return true
	default:
		return false
	}
}

func (r *Receiver) deliver(idx int32, fn func(*Delivery)) {
	s := &r.slots[idx]
	m := &r.msg
	m.TopicID, m.Epoch, m.MsgHeader = r.cfg.TopicID, s.epoch, s.hdr
	m.Payload = s.buf[:s.msgLen]
	m.Lost = s.lost
	m.KernelRx, m.ReadRx = s.kernelRx, s.readRx
	r.st.delivered.Add(1)
	fn(m)
	m.Payload = nil
	r.free <- idx
}

// Close stops the receive goroutine and closes the socket. Idempotent.
func (r *Receiver) Close() error {
	var err error
	r.once.Do(func() {
		r.ended.Store(true)
		close(r.done)
		err = r.conn.Close()
		r.wg.Wait()
	})
	return err
}

func (r *Receiver) now() int64 { return int64(time.Since(r.base)) }

func (r *Receiver) loop() {
	defer r.wg.Done()
	for {
		if active, d := r.lease.active(r.now()); active {
			// A consumer owns the socket: wake once per lease to see
			// whether it is gone (a slow callback, nobody calling Next).
			if !r.lease.pause(d, r.done) {
				return
			}
			continue
		}
		if !r.mu.TryLock() {
			continue // a consumer just took it; lease.active now says so
		}
		if active, _ := r.lease.active(r.now()); active {
			r.mu.Unlock()
			continue
		}
		stop := r.serve()
		r.mu.Unlock()
		if stop {
			return
		}
	}
}

// serve is one netpoller read of the background goroutine, with the timers
// (mu held). true: the receiver is closed.
func (r *Receiver) serve() bool {
	now := r.now()
	want := now + int64(50*time.Millisecond)
	if r.pending() {
		want = r.nextTick
	}
	if want < r.deadline || r.deadline <= now {
		r.deadline = want
		_ = r.conn.SetReadDeadline(r.base.Add(time.Duration(r.deadline)))
	}
	// A consumer that arrives from here on sets want and then pushes the
	// deadline into the past, which ends the read below at once.
	if r.lease.want.Load() {
		return false
	}
	n, from, rx, err := r.conn.ReadFrom(r.rbuf)
	now = r.now()
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return true
		}
		select {
		case <-r.done:
			return true
		default:
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			r.cfg.Logger.Warn("udp: receive error", "local", r.conn.LocalAddr(), "err", err)
		}
	} else {
		r.handle(r.rbuf[:n], from, rx, now)
	}
	// No consumer reads: acknowledge at once.
	r.flushAcks(now)
	r.timers(now)
	return false
}

// pending reports whether timers matter now (gaps, incomplete messages,
// heartbeat tails).
func (r *Receiver) pending() bool {
	for i := range r.streams {
		st := &r.streams[i]
		if st.used && st.confirmed && (st.high >= st.next || st.hbLast >= st.next) {
			return true
		}
	}
	return false
}

func (r *Receiver) allowed(a netip.Addr) bool {
	if len(r.cfg.AllowFrom) == 0 {
		return true
	}
	for _, p := range r.cfg.AllowFrom {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// handle processes one datagram. Nothing touches state before the datagram
// is fully validated.
func (r *Receiver) handle(b []byte, from netip.AddrPort, rx int64, now int64) {
	r.newer = 0
	r.st.datagrams.Add(1)
	r.st.bytes.Add(uint64(len(b)))
	if !r.allowed(from.Addr()) {
		r.st.unknownSource.Add(1)
		return
	}
	if len(b) > MaxDatagram {
		r.st.malformed.Add(1)
		return
	}
	c, err := Parse(b)
	if err != nil {
		r.st.malformed.Add(1)
		return
	}
	var ctr uint64
	if r.mac != nil || c.Auth {
		ok := false
		if r.mac != nil && c.Auth {
			ctr, ok = r.mac.verify(b)
		}
		if !ok {
			r.st.unauth.Add(1)
			return
		}
		b = c.body(b)
	}
	if c.TopicID != r.cfg.TopicID {
		r.st.unknownTopic.Add(1)
		return
	}
	var readRx int64
	if rx != 0 {
		// The datagrams of a coalesced read (UDP_GRO) share the kernel's
		// stamp and were read by the same recvmsg: one clock read serves
		// them all (a 1 MiB message across a veth is 17 reads, not 713).
		if rx != r.lastRx {
			r.lastRx, r.lastReadRx = rx, time.Now().UnixNano()
		}
		readRx = r.lastReadRx
		d := uint64(max(readRx-rx, 0))
		r.st.stamped.Add(1)
		r.st.stackSum.Add(d)
		if d > r.st.stackMax.Load() {
			r.st.stackMax.Store(d)
		}
	}
	switch c.Kind {
	case KindData:
		if err := r.data.decode(c, b); err != nil || int(r.data.MsgLen) > r.cfg.MaxPayload {
			r.st.malformed.Add(1)
			return
		}
		si := r.stream(c.Epoch, from, r.data.Seq, ctr, now, false)
		if si < 0 || !r.fresh(si, ctr, now) {
			return
		}
		r.fragment(si, &r.data, rx, readRx, now)
		r.challenge(si, now)
	case KindBatch:
		if err := r.batch.decode(b); err != nil {
			r.st.malformed.Add(1)
			return
		}
		// Validate every record's length before touching state.
		for r.batch.Next(&r.rec) {
			if len(r.rec.Payload) > r.cfg.MaxPayload {
				r.st.malformed.Add(1)
				return
			}
		}
		_ = r.batch.decode(b)
		first := true
		si := -1
		for r.batch.Next(&r.rec) {
			if first {
				if si = r.stream(c.Epoch, from, r.rec.Seq, ctr, now, false); si < 0 || !r.fresh(si, ctr, now) {
					return
				}
				first = false
			}
			d := &r.data
			d.TopicID, d.Epoch, d.MsgHeader, d.KeepLast = c.TopicID, c.Epoch, r.rec.MsgHeader, r.batch.KeepLast
			d.MsgLen, d.FragSize, d.FragIndex, d.FragCount = uint32(len(r.rec.Payload)), uint32(max(len(r.rec.Payload), 1)), 0, 1
			d.Payload = r.rec.Payload
			r.fragment(si, d, rx, readRx, now)
		}
		r.challenge(si, now)
	case KindHeartbeat:
		if err := r.hb.decode(c, b); err != nil {
			r.st.malformed.Add(1)
			return
		}
		start := r.hb.FirstSeq
		if !r.cfg.Reliable {
			start = r.hb.LastSeq + 1 // nothing to recover in best effort
		}
		// An echo of a stateless challenge (sent while the writer table
		// was full) proves the writer: it may displace an unconfirmed one.
		proven := r.hb.Echo != 0 && r.statelessOK(r.hb.Echo, c.Epoch, from, now)
		si := r.stream(c.Epoch, from, start, ctr, now, proven)
		if si < 0 || !r.fresh(si, ctr, now) {
			return
		}
		if proven {
			r.confirm(si, r.hb.Token)
		}
		r.heartbeat(si, &r.hb, now)
	case KindAckNack, KindAnnounce:
		// Not for a receiver: another subscriber's traffic on a shared
		// group. Validated above; ignored.
	}
}

// stream finds or creates the stream of epoch; -1 when the datagram must be
// dropped (forged source, table full).
//
// With the table full, a new epoch may take the entry of a stream that is
// silent, presumed dead, or unconfirmed past ReassemblyTimeout; a proven
// writer (it echoed a stateless challenge) may take any unconfirmed one.
// Otherwise the datagram is dropped (UnknownWriter) and its source gets a
// stateless challenge: no state is kept for it, so a flood of made-up
// epochs cannot lock a real publisher out of a full table.
//
// A known epoch from another source address is dropped (Forged), except
// that in a keyed domain an authentic datagram newer than anything its
// unconfirmed stream has seen moves the stream to its source (rehome).
// ctr is the datagram's counter (0 unkeyed).
func (r *Receiver) stream(epoch uint32, from netip.AddrPort, seq, ctr uint64, now int64, proven bool) int {
	freeIdx := -1
	for i := range r.streams {
		st := &r.streams[i]
		if !st.used {
			if freeIdx < 0 {
				freeIdx = i
			}
			continue
		}
		if st.epoch == epoch {
			if st.src != from && !r.rehome(st, from, ctr) {
				return -1
			}
			// lastActive moves in fresh: a replay must not keep a
			// stream alive.
			return i
		}
	}
	if freeIdx < 0 {
		// Reclaim the stalest stream that has been silent long enough, or
		// one that never completed a message within ReassemblyTimeout (a
		// flood of made-up epochs must not lock a real publisher out).
		old := -1
		for i := range r.streams {
			o := &r.streams[i]
			silent := now-o.lastActive > int64(r.cfg.WriterTimeout)
			barren := !o.confirmed && (proven || now-o.created > int64(r.cfg.ReassemblyTimeout))
			if (silent || barren || r.presumedDead(o, now)) && (old < 0 || o.lastActive < r.streams[old].lastActive) {
				old = i
			}
		}
		if old < 0 {
			r.st.unknownWriter.Add(1)
			r.statelessChallenge(epoch, from, now)
			return -1
		}
		r.dropStream(old)
		freeIdx = old
	}
	st := &r.streams[freeIdx]
	st.used, st.epoch, st.src, st.lastActive = true, epoch, from, now
	st.next = seq
	if seq <= uint64(r.cfg.Depth) {
		// The publisher still holds its start: take everything from 1.
		st.next = 1
	}
	st.high, st.hbFirst, st.hbLast, st.hbLastAt, st.gapSince, st.lastNack, st.pendLost, st.unacked = 0, 0, 0, now, -1, 0, 0, 0
	st.ackDue, st.keepLast = false, r.cfg.KeepLast
	st.created, st.delivered = now, 0
	st.hbAt, st.hbGap = -1, 0
	st.confirmed, st.token, st.chalAt, st.held, st.rw = false, 0, -1, 0, replayWindow{}
	st.heldQ = st.heldQ[:0]
	for st.cookie == 0 {
		st.cookie = rand.Uint64()
	}
	for i := range st.win {
		st.win[i] = -1
		st.wholeNack[i] = nackMark{}
	}
	return freeIdx
}

// fresh reports whether an authenticated datagram's counter is new for
// stream si (always true in an unauthenticated domain), and then marks
// the stream active; a replay is dropped and counted.
func (r *Receiver) fresh(si int, ctr uint64, now int64) bool {
	st := &r.streams[si]
	if r.mac == nil || st.rw.accept(ctr) {
		st.lastActive = now
		return true
	}
	r.st.replayed.Add(1)
	return false
}

// rehome decides what a datagram of stream st's epoch from another source
// address does (mu held). Unkeyed, the address is all that ties datagrams
// to their writer: the datagram is Forged. Under a domain key only a key
// holder can have made it, and the epoch is the real publisher's, so an
// authentic datagram with a counter above every one the stream accepted
// was sent by that publisher after them: while the stream is unconfirmed
// it moves to the new source, which is challenged there (the cookie sent
// to the old address is void). A captured datagram replayed from
// elsewhere has an old counter (Replayed): it can open a stream but never
// keep it from the real writer (issue 31, finding 2: a replay from
// another address squatted the epoch, the real publisher's datagrams were
// counted Forged, and the subscriber got 10–40 % of the stream with
// nothing counted lost). A confirmed stream never moves: its address was
// proven by a sealed round trip.
func (r *Receiver) rehome(st *stream, from netip.AddrPort, ctr uint64) bool {
	switch {
	case r.mac == nil:
		r.st.forged.Add(1)
		return false
	case ctr <= st.rw.top:
		r.st.replayed.Add(1)
		return false
	case st.confirmed:
		r.st.forged.Add(1)
		return false
	}
	st.src, st.chalAt, st.cookie = from, -1, 0
	for st.cookie == 0 {
		st.cookie = rand.Uint64()
	}
	return true
}

// challengeGap is the shortest spacing of challenges to one unconfirmed
// stream. Challenges are sent only in answer to a datagram of that
// stream, never from a timer, so what a forger draws is at most one
// 48-byte ACKNACK per datagram it sends (≤ its own size) and at most one
// per challengeGap.
const challengeGap = 5 * time.Millisecond

// challenge asks the source of unconfirmed stream si to echo its cookie
// (mu held).
func (r *Receiver) challenge(si int, now int64) {
	st := &r.streams[si]
	if st.confirmed || !st.used || (st.chalAt >= 0 && now-st.chalAt < int64(challengeGap)) {
		return
	}
	st.chalAt = now
	r.st.challenges.Add(1)
	a := &r.an
	a.TopicID, a.Epoch, a.Ack, a.N = r.cfg.TopicID, st.epoch, st.next-1, 0
	a.Challenge, a.Cookie, a.Token = true, st.cookie, st.token
	r.writeAckNack(st.src)
}

// cookieBucket is the lifetime unit of stateless cookies: an echo is
// accepted within one to two buckets of the challenge, so a captured echo
// cannot be replayed later to resurrect a stream.
const cookieBucket = 128 * time.Millisecond

// statelessCookie is the cookie of a stateless challenge to (epoch, src)
// in time bucket b: a keyed hash (random seed per receiver), like a SYN
// cookie. Non-zero.
func (r *Receiver) statelessCookie(epoch uint32, src netip.AddrPort, b int64) uint64 {
	var k [30]byte
	ip := src.Addr().As16()
	be.PutUint32(k[0:], epoch)
	copy(k[4:], ip[:])
	be.PutUint16(k[20:], src.Port())
	be.PutUint64(k[22:], uint64(b))
	return maphash.Bytes(r.cseed, k[:]) | 1
}

// statelessOK reports whether echo answers a stateless challenge to
// (epoch, src) sent in this or the previous cookie bucket.
func (r *Receiver) statelessOK(echo uint64, epoch uint32, src netip.AddrPort, now int64) bool {
	b := now / int64(cookieBucket)
	return echo == r.statelessCookie(epoch, src, b) || echo == r.statelessCookie(epoch, src, b-1)
}

// statelessChallenge challenges a writer that found the table full,
// keeping no state for it; only in answer to a datagram, and at most one
// per challengeGap per hashed source address (the cookie of epoch 0), so
// a flood from one source draws at most 200 challenges/s however many
// epochs it makes up, while a writer at another address keeps its own
// budget.
func (r *Receiver) statelessChallenge(epoch uint32, from netip.AddrPort, now int64) {
	b := now / int64(cookieBucket)
	ck := r.statelessCookie(epoch, from, b)
	at := &r.schal[r.statelessCookie(0, from, 0)%uint64(len(r.schal))]
	if *at != 0 && now-*at < int64(challengeGap) {
		return
	}
	*at = now
	r.st.challenges.Add(1)
	a := &r.an
	a.TopicID, a.Epoch, a.Ack, a.N = r.cfg.TopicID, epoch, 0, 0
	a.Challenge, a.Cookie, a.Token = true, ck, 0
	r.writeAckNack(from)
}

// writeAckNack encodes r.an (sealing it in a keyed domain) and sends it.
func (r *Receiver) writeAckNack(to netip.AddrPort) bool {
	n, err := r.an.MarshalBinaryTo(r.wbuf)
	if err == nil && r.mac != nil {
		n, err = r.mac.seal(r.wbuf, n)
	}
	if err != nil {
		return false
	}
	_ = r.conn.WriteTo(r.wbuf[:n], to)
	r.st.acks.Add(1)
	return true
}

// confirm marks stream si confirmed (its source echoed the cookie) and
// hands out what it completed meanwhile.
func (r *Receiver) confirm(si int, token uint64) {
	st := &r.streams[si]
	st.token = token
	if st.confirmed {
		return
	}
	st.confirmed = true
	r.st.confirmed.Add(1)
	if r.seenAny {
		r.st.epochs.Add(1)
	}
	r.seenAny = true
	// What it completed meanwhile was sequenced exactly as if it had been
	// confirmed (same order, same loss accounting); hand it out now.
	for _, idx := range st.heldQ {
		r.slots[idx].state = slotReady
		st.held--
		r.st.lost.Add(r.slots[idx].lost)
		r.enqueue(idx)
	}
	st.heldQ = st.heldQ[:0]
	r.drain(si)
}

// unconfirmedHeld is the number of slots unconfirmed streams hold.
func (r *Receiver) unconfirmedHeld() int {
	n := 0
	for i := range r.streams {
		if st := &r.streams[i]; st.used && !st.confirmed {
			n += st.held
		}
	}
	return n
}

// oldestUnconfirmedSlot is the slot an unconfirmed stream has held
// longest (-1 none): it made no progress, so it is reclaimed first.
func (r *Receiver) oldestUnconfirmedSlot() int32 {
	v := int32(-1)
	for i := range r.slots {
		s := &r.slots[i]
		if (s.state == slotFilling || s.state == slotComplete || s.state == slotHeld) && !r.streams[s.stream].confirmed &&
			(v < 0 || s.started < r.slots[v].started) {
			v = int32(i)
		}
	}
	return v
}

// missedHeartbeats is how many of a stream's heartbeat periods of silence
// make it presumed dead when the writer table is full.
const missedHeartbeats = 4

// presumedDead reports whether stream o (in use) missed missedHeartbeats
// of its own heartbeats, and at least ReassemblyTimeout: a live publisher
// heartbeats every period, so this is a publisher that stopped, typically
// one restarted under a new epoch. Only a full writer table evicts on it:
// waiting for WriterTimeout there stalled every restart beyond MaxWriters
// epochs for seconds, long enough for the new reliable publisher to drop
// the (live) subscriber as dead and overwrite its unacknowledged history.
// A stream that never heartbeated twice has no known period and waits for
// WriterTimeout (or the barren rule).
func (r *Receiver) presumedDead(o *stream, now int64) bool {
	if o.hbGap <= 0 {
		return false
	}
	return now-o.lastActive > max(missedHeartbeats*o.hbGap, int64(r.cfg.ReassemblyTimeout))
}

func (r *Receiver) dropStream(si int) {
	st := &r.streams[si]
	for _, idx := range st.win {
		if idx >= 0 {
			r.freeSlot(idx)
		}
	}
	for len(st.heldQ) > 0 {
		r.freeSlot(st.heldQ[len(st.heldQ)-1])
	}
	st.used = false
}

func (r *Receiver) freeSlot(idx int32) {
	s := &r.slots[idx]
	if s.state == slotFree || s.state == slotReady {
		return
	}
	st := &r.streams[s.stream]
	if s.state == slotHeld {
		for i, j := range st.heldQ {
			if j == idx {
				// A held message was sequenced already: discarding it (its
				// unconfirmed writer outgrew its share) is a loss, like the
				// gap before it. Both go to the next message in sequence —
				// the next held one, else the next to be drained — so a
				// writer confirmed later reports Delivered+Lost over every
				// sequence number. (They vanished from both counts, and a
				// burst from a new publisher read as fewer messages than it
				// sent.) A writer never confirmed reports nothing of this.
				if carry := s.lost + 1; i+1 < len(st.heldQ) {
					r.slots[st.heldQ[i+1]].lost += carry
				} else {
					st.pendLost += carry
				}
				st.heldQ = append(st.heldQ[:i], st.heldQ[i+1:]...)
				break
			}
		}
	} else if st.win[s.seq&r.mask] == idx {
		st.win[s.seq&r.mask] = -1
	}
	st.held--
	if (s.state == slotComplete || s.state == slotHeld) && !st.confirmed {
		r.st.unconfirmed.Add(1)
	}
	s.state = slotFree
	r.free <- idx
}

// fragment stores one validated fragment.
func (r *Receiver) fragment(si int, d *Data, rx, readRx, now int64) {
	st := &r.streams[si]
	seq := d.Seq
	if seq < st.next {
		r.st.duplicates.Add(1)
		return
	}
	st.keepLast = d.KeepLast
	if r.cfg.KeepLast && st.keepLast && st.confirmed && seq-st.next >= uint64(r.cfg.Depth) {
		// When the publisher sent seq it held only seq−Depth+1…seq: the
		// rest will never come. Only for a confirmed writer, so a forged
		// stream cannot make a real one skip.
		r.skipTo(si, seq-uint64(r.cfg.Depth)+1)
		if seq < st.next {
			// The skip delivered seq itself (this was a duplicate).
			r.st.duplicates.Add(1)
			return
		}
	}
	if r.cfg.Reliable && seq-st.next > r.mask {
		r.st.overruns.Add(1)
		if seq > st.high {
			st.high = seq
		}
		return
	}
	idx := st.win[seq&r.mask]
	var s *slot
	if idx >= 0 && r.slots[idx].seq == seq {
		s = &r.slots[idx]
		if s.state != slotFilling {
			r.st.duplicates.Add(1)
			return
		}
		if s.msgLen != d.MsgLen || s.fragSize != d.FragSize || s.fragCount != d.FragCount {
			r.st.malformed.Add(1)
			return
		}
		if s.bits[d.FragIndex/64]&(1<<(d.FragIndex%64)) != 0 {
			r.st.duplicates.Add(1)
			return
		}
	} else {
		if idx >= 0 {
			// Best effort only (reliable keeps seq-next within the mask):
			// an older message in the same window position is stale.
			r.st.evicted.Add(1)
			r.freeSlot(idx)
		}
		if idx = r.takeSlot(si, seq); idx < 0 {
			return
		}
		s = &r.slots[idx]
		s.stream, s.seq, s.epoch, s.hdr = si, seq, st.epoch, d.MsgHeader
		s.msgLen, s.fragSize, s.fragCount, s.got, s.maxFrag = d.MsgLen, d.FragSize, d.FragCount, 0, 0
		s.started, s.lost = now, 0
		words := (int(d.FragCount) + 63) / 64
		if words > len(s.bits) {
			r.st.malformed.Add(1) // cannot happen: FragCount ≤ maxFrags
			r.freeSlot(idx)
			return
		}
		clear(s.bits[:words])
		clear(s.nbits[:words])
		st.win[seq&r.mask] = idx
	}
	if seq > st.high {
		st.high = seq
	}
	copy(s.buf[d.Offset():], d.Payload)
	s.bits[d.FragIndex/64] |= 1 << (d.FragIndex % 64)
	s.got++
	s.maxFrag = max(s.maxFrag, d.FragIndex+1)
	if d.Retransmit && s.nackedAt > 0 && now > s.nackedAt {
		// How long retransmissions take to arrive (queueing behind bursts
		// included) sets how long a NACK is given before it is repeated.
		r.srtt += (now - s.nackedAt - r.srtt) / 8
	}
	s.kernelRx, s.readRx = rx, readRx
	if s.got < s.fragCount {
		return
	}
	s.state = slotComplete
	if !r.cfg.Reliable {
		// Deliver at once; everything older still incomplete is lost.
		if seq > st.next {
			for q := st.next; q < seq && seq-q <= r.mask; q++ {
				if j := st.win[q&r.mask]; j >= 0 && r.slots[j].seq == q {
					r.freeSlot(j)
				}
			}
			st.pendLost += seq - st.next
			st.next = seq
		}
	}
	r.drain(si)
}

// takeSlot returns a free slot (allocating its memory on first use), evicting
// per mode when none is free; -1 drops the fragment.
func (r *Receiver) takeSlot(si int, seq uint64) int32 {
	var idx int32 = -1
	if !r.streams[si].confirmed && r.unconfirmedHeld() >= r.share {
		// Unconfirmed writers share a bounded part of the pool: the
		// oldest slot among them is reclaimed (it made no progress), so
		// forged streams can never crowd out a confirmed one.
		v := r.oldestUnconfirmedSlot()
		if v < 0 {
			r.st.exhausted.Add(1)
			return -1
		}
		if r.cfg.Reliable && r.slots[v].stream == si && r.slots[v].seq < seq {
			// Reliable: keep the stream's start and drop what comes
			// after it (NACKed once the writer is confirmed), rather
			// than reclaim its oldest message, which would be NACKed
			// too, a window's worth of retransmissions later.
			r.st.overruns.Add(1)
			if st := &r.streams[si]; seq > st.high {
				st.high = seq
			}
			return -1
		}
		r.st.evicted.Add(1)
		r.freeSlot(v)
	}
	select {
	case idx = <-r.free:
	default:
		if r.streams[si].confirmed {
			if v := r.oldestUnconfirmedSlot(); v >= 0 {
				r.st.evicted.Add(1)
				r.freeSlot(v)
				idx = <-r.free
				break
			}
		}
		victim := int32(-1)
		for i := range r.slots {
			s := &r.slots[i]
			if s.state != slotFilling && (s.state != slotComplete || !r.cfg.Reliable) {
				continue
			}
			if !r.streams[si].confirmed && r.streams[s.stream].confirmed {
				continue // an unconfirmed writer never evicts a confirmed one
			}
			if r.cfg.Reliable {
				// Only for the message the stream waits on: evict the
				// newest buffered one (it will be NACKed again).
				if s.stream != si || seq != r.streams[si].next {
					continue
				}
				if victim < 0 || s.seq > r.slots[victim].seq {
					victim = int32(i)
				}
			} else if victim < 0 || s.started < r.slots[victim].started {
				victim = int32(i)
			}
		}
		if victim < 0 {
			r.st.exhausted.Add(1)
			return -1
		}
		r.st.evicted.Add(1)
		r.freeSlot(victim)
		idx = <-r.free
	}
	s := &r.slots[idx]
	r.allocSlot(s)
	s.state = slotFilling
	s.stream = si
	r.streams[si].held++
	return idx
}

// allocSlot gives a slot its memory on first use: the pool only ever grows
// to PoolLimit.
func (r *Receiver) allocSlot(s *slot) {
	if s.buf != nil {
		return
	}
	s.buf = make([]byte, max(r.cfg.MaxPayload, 1))
	s.bits = make([]uint64, (r.maxFrags+63)/64)
	s.nbits = make([]uint64, len(s.bits))
	r.poolBytes += len(s.buf) + 16*len(s.bits)
	r.st.poolBytes.Store(uint64(r.poolBytes))
}

// enqueue hands the complete message idx to the consumer (mu held). With
// a Queue bound, the oldest waiting messages not completed by the current
// datagram are discarded first, so that at most Queue wait (more only
// when one datagram completed more). Their loss goes to the oldest one
// kept. The waiting ones are taken out of the channel and put back, so
// the consumer (which takes from it without mu) never sees a slot whose
// loss count is being changed; it only finds the queue empty meanwhile
// and then waits for mu. Never blocks: ready's capacity is the slots.
func (r *Receiver) enqueue(idx int32) {
	if q := r.cfg.Queue; q > 0 && len(r.ready) >= q && len(r.ready) > r.newer {
		held := r.qbuf[:0]
	take:
		for {
			select {
			case i := <-r.ready:
				held = append(held, i)
			default:
				break take
			}
		}
		// The consumer may have taken some meanwhile: what is left of the
		// older datagrams' messages is at most len(held)−newer.
		drop := max(0, min(len(held)+1-q, len(held)-r.newer))
		var carry uint64
		for _, i := range held[:drop] {
			s := &r.slots[i]
			carry += s.lost + 1
			s.state = slotFree
			r.free <- i
		}
		held = append(held[drop:], idx)
		r.slots[held[0]].lost += carry
		r.st.lost.Add(uint64(drop))
		r.st.dropped.Add(uint64(drop))
		for _, i := range held {
			r.ready <- i
		}
	} else {
		r.ready <- idx
	}
	r.newer++
}

// drain hands complete messages from st.next on to the caller, in order.
func (r *Receiver) drain(si int) {
	st := &r.streams[si]
	if r.cfg.Reliable && !st.confirmed {
		// A reliable stream is not sequenced before its writer is
		// confirmed: its complete messages wait in the window, so one
		// the unconfirmed share has to give up leaves a gap at or after
		// next, which is NACKed once the writer is confirmed (the
		// publisher still holds it: nothing was acknowledged). Draining
		// into heldQ moved next past them, and a discarded held message
		// was then a loss the publisher was never asked to repair
		// (issue 31, finding 1).
		return
	}
	for {
		idx := st.win[st.next&r.mask]
		if idx < 0 || r.slots[idx].seq != st.next || r.slots[idx].state != slotComplete {
			break
		}
		s := &r.slots[idx]
		st.win[st.next&r.mask] = -1
		s.lost = st.pendLost
		st.pendLost = 0
		if st.confirmed {
			r.st.lost.Add(s.lost)
			s.state = slotReady
			st.held--
			r.enqueue(idx)
		} else {
			// Not handed out before the writer is confirmed.
			s.state = slotHeld
			st.heldQ = append(st.heldQ, idx)
		}
		st.next++
		st.gapSince = -1
		st.unacked++
		st.delivered++
	}
	// Acknowledge every half window so the publisher's send window keeps
	// moving between heartbeats: after the delivery's callback when a
	// consumer reads (flushAcks), so the acknowledgement's send is not on
	// the message's way to the callback — in a ping-pong it then leaves
	// while the reply wakes the other side, and is there when that side
	// sends next.
	if r.cfg.Reliable && !st.keepLast && st.unacked >= max(r.cfg.Depth/2, 1) {
		st.ackDue, r.acksDue = true, true
		r.ackHint.Store(true)
	}
}

// flushAcks sends the acknowledgements drain deferred (mu held).
func (r *Receiver) flushAcks(now int64) {
	if !r.acksDue {
		return
	}
	r.acksDue = false
	r.ackHint.Store(false)
	for si := range r.streams {
		st := &r.streams[si]
		if !st.ackDue {
			continue
		}
		st.ackDue = false
		if st.used && st.unacked > 0 { // a heartbeat's answer may have acknowledged it
			r.sendAckNack(si, now, false)
		}
	}
}

// flushAcksAfterDelivery sends deferred acknowledgements once a consumer's
// callback returned, if the socket is free (else whoever holds it, or the
// consumer's next read, sends them).
func (r *Receiver) flushAcksAfterDelivery() {
	if !r.ackHint.Load() || !r.mu.TryLock() {
		return
	}
	r.flushAcks(r.now())
	r.mu.Unlock()
}

// heartbeat applies a publisher's history range and answers it (reliable).
func (r *Receiver) heartbeat(si int, hb *Heartbeat, now int64) {
	st := &r.streams[si]
	if hb.Echo != 0 && hb.Echo == st.cookie {
		r.confirm(si, hb.Token)
	}
	if !st.confirmed {
		// Nothing of an unconfirmed writer's heartbeat is acted on (no
		// skip, no NACK: a forged heartbeat draws only the challenge).
		r.challenge(si, now)
		return
	}
	if st.hbAt >= 0 {
		st.hbGap = max(st.hbGap, now-st.hbAt)
	}
	st.hbAt = now
	if hb.LastSeq > st.hbLast {
		st.hbLast, st.hbLastAt = hb.LastSeq, now
	}
	st.hbFirst = hb.FirstSeq
	if r.cfg.Reliable {
		if st.next < hb.FirstSeq {
			// The publisher no longer holds these: count them lost.
			r.skipTo(si, hb.FirstSeq)
		}
		r.sendAckNack(si, now, now-st.lastNack >= int64(r.cfg.NackInterval))
	}
}

// skipTo gives up on the messages before seq that have not arrived
// whole (counted lost); complete ones among them are still delivered, in
// order. At most a window of positions is walked, whatever the distance.
func (r *Receiver) skipTo(si int, seq uint64) {
	st := &r.streams[si]
	for n := uint64(0); n <= r.mask; n++ {
		r.drain(si)
		if st.next >= seq {
			return
		}
		if j := st.win[st.next&r.mask]; j >= 0 && r.slots[j].seq == st.next {
			r.freeSlot(j)
		}
		st.pendLost++
		st.next++
	}
	if st.next < seq {
		// Beyond the window: nothing there was held.
		st.pendLost += seq - st.next
		st.next = seq
	}
	r.drain(si)
}

// tick runs timers: NACKs, reassembly timeouts, heartbeat tail loss, stale
// streams.
func (r *Receiver) tick(now int64) {
	r.newer = 0 // what a tick completes (a skip) came with no datagram
	for si := range r.streams {
		st := &r.streams[si]
		if !st.used {
			continue
		}
		if now-st.lastActive > int64(r.cfg.WriterTimeout) {
			r.dropStream(si)
			continue
		}
		if !st.confirmed {
			// No NACKs, timers or loss accounting for a writer that has
			// not answered its challenge; it is forgotten, with its
			// slots, when it did not within confirmTimeout.
			if now-st.created > int64(r.confirmTimeout()) {
				r.dropStream(si)
			}
			continue
		}
		if r.cfg.Reliable {
			if st.high >= st.next || st.hbLast >= st.next {
				if st.gapSince < 0 {
					st.gapSince = now
				}
				if now-st.gapSince >= int64(r.cfg.NackDelay) && now-st.lastNack >= int64(r.cfg.NackInterval) {
					r.sendAckNack(si, now, true)
				}
			}
			continue
		}
		// Best effort: incomplete messages time out.
		for _, idx := range st.win {
			if idx >= 0 && r.slots[idx].state == slotFilling && now-r.slots[idx].started > int64(r.cfg.ReassemblyTimeout) {
				r.st.timeouts.Add(1)
				r.freeSlot(idx)
			}
		}
		// A heartbeat announced messages that never came: count them lost.
		if st.hbLast >= st.next && now-st.hbLastAt > int64(r.cfg.ReassemblyTimeout) {
			for q := st.next; q <= st.hbLast && st.hbLast-q <= r.mask; q++ {
				if j := st.win[q&r.mask]; j >= 0 && r.slots[j].seq == q {
					r.freeSlot(j)
				}
			}
			lost := st.hbLast + 1 - st.next
			r.st.lost.Add(lost)
			st.next = st.hbLast + 1
		}
	}
}

// sendAckNack reports st.next-1 as acknowledged and, with nack, lists what
// is missing up to the highest sequence known, in as many datagrams as
// needed (at most 8 per call).
func (r *Receiver) sendAckNack(si int, now int64, nack bool) {
	st := &r.streams[si]
	if !st.confirmed {
		return
	}
	a := &r.an
	a.TopicID, a.Epoch, a.Ack, a.N = r.cfg.TopicID, st.epoch, st.next-1, 0
	a.Challenge, a.Cookie, a.Token = false, st.cookie, st.token
	top := max(st.high, st.hbLast)
	if !nack {
		top = 0
	}
	if top >= st.next+r.mask {
		top = st.next + r.mask
	}
	sent := 0
	flush := func() bool {
		if r.writeAckNack(st.src) && a.N > 0 {
			r.st.nacks.Add(1)
		}
		a.N = 0
		sent++
		return sent < 8
	}
	add := func(e NackEntry) bool {
		a.Entries[a.N] = e
		a.N++
		if a.N == MaxNackEntries {
			return flush()
		}
		return true
	}
	for q := st.next; q <= top && st.next > 0; q++ {
		idx := st.win[q&r.mask]
		if idx < 0 || r.slots[idx].seq != q {
			m := &st.wholeNack[q&r.mask]
			if m.seq == q && now-m.at <= max(int64(r.cfg.NackRetry), 2*r.srtt) {
				continue // asked for already; its retransmission may be queued
			}
			m.seq, m.at = q, now
			if !add(NackEntry{Seq: q}) {
				break
			}
			continue
		}
		s := &r.slots[idx]
		if s.state != slotFilling {
			continue
		}
		// The newest message may still be arriving: only fragments below
		// the highest one seen are known missing, unless a later message or
		// a heartbeat (sent after the last fragment) proves the tail lost.
		limit := s.maxFrag
		if q < st.high || q <= st.hbLast {
			limit = s.fragCount
		}
		// A fragment NACKed once is not asked for again until NackRetry
		// passed: its retransmission may still sit behind a burst in the
		// socket queue.
		if now-s.nackedAt > max(int64(r.cfg.NackRetry), 2*r.srtt) {
			clear(s.nbits[:(s.fragCount+63)/64])
			s.nackedAt = now
		}
		missing := func(f uint32) bool {
			return (s.bits[f/64]|s.nbits[f/64])&(1<<(f%64)) == 0
		}
		ok := true
		for f := uint32(0); f < limit && ok; {
			if !missing(f) {
				f++
				continue
			}
			e := f
			for e < limit && missing(e) {
				s.nbits[e/64] |= 1 << (e % 64)
				e++
			}
			ok = add(NackEntry{Seq: q, FragFirst: f, FragCount: e - f})
			f = e
		}
		if !ok {
			break
		}
	}
	if a.N > 0 || sent == 0 {
		flush()
	}
	if nack {
		st.lastNack = now
	}
	st.unacked = 0
}

// confirmTimeout is how long a stream may stay unconfirmed before it is
// forgotten with its slots: WriterTimeout (3 s by default), so a quiet
// best-effort publisher (one heartbeat per second) whose echo was lost is
// challenged again by its next heartbeat before its held messages go.
// What unconfirmed streams hold meanwhile is bounded by their share.
func (r *Receiver) confirmTimeout() time.Duration { return r.cfg.WriterTimeout }
