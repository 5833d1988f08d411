package shm

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/futex"
	"github.com/hilrig/hilrig/middleware/internal/rt"
)

// Meta is what the caller stamps into a frame header at commit.
type Meta struct {
	SendMono  int64
	SendClock int64
	Clock     int32
	Flags     uint8
}

// WriterStats mirror the publisher counters stored in the segment.
type WriterStats struct {
	Published, BlockedNs, Timeouts, Dropped uint64
}

// Writer is the single publisher of a Region. Not safe for concurrent use.
type Writer struct {
	r        *Region
	pid      int
	head     uint64 // last committed position (local copy of the shared word)
	epoch    uint32
	base     uint64  // epoch base position
	ringSlot []int32 // slot referenced by each ring entry, -1 none
	inRing   []bool
	free     []int32 // LIFO of slots neither in the ring nor being written
	skipped  []int32 // scratch for held slots popped during selection
	// reserved marks the slots whose file pages this writer has
	// reserved (nil for anonymous rings); see reserve.go.
	reserved []bool
	cur      int32 // acquired slot, -1 none
	next     int32 // slot picked for the next Acquire, -1 none
	curPos   uint64
	// OnDrop is called (outside the hot path) when a dead subscriber is
	// dropped; may be nil.
	OnDrop func(pid int)

	published, blockedNs, timeouts, dropped uint64
}

// NewWriter claims the publisher role of r for process pid (start is its
// start time). If a live publisher owns the ring it fails with ErrBusy. A
// dead owner's ring is recovered: a message it committed but had not
// announced is announced, the slot it was writing is reclaimed, and a new
// epoch starts at the current head so positions stay continuous.
//
// On a file-backed ring it first reserves the pool's working set (see
// reserve.go) and fails with ErrNoSpace, naming the file, if the
// filesystem cannot hold it.
func NewWriter(r *Region, pid int, start uint64) (*Writer, error) {
	var reserved []bool
	if r.file != nil {
		if err := r.checkSize(); err != nil {
			return nil, err
		}
		if err := r.reserveSlots(0, r.G.WorkSlots); err != nil {
			return nil, err
		}
		reserved = make([]bool, r.G.PoolLen)
		for k := 0; k < r.G.WorkSlots; k++ {
			reserved[k] = true
		}
	}
	ownerW := r.u64(offPubOwner)
	for {
		owner := atomic.LoadUint64(ownerW)
		if owner != 0 {
			opid := int(owner >> 32)
			if rt.Alive(opid, atomic.LoadUint64(r.u64(offPubStart))) {
				return nil, fmt.Errorf("%w: topic %q already has a live publisher (pid %d)", ErrBusy, r.P.Topic, opid)
			}
		}
		if atomic.CompareAndSwapUint64(ownerW, owner, uint64(pid)<<32|1) {
			break
		}
	}
	atomic.StoreUint64(r.u64(offPubStart), start)
	w := &Writer{
		r: r, pid: pid, cur: -1, next: -1, reserved: reserved,
		ringSlot: make([]int32, r.P.RingLen),
		inRing:   make([]bool, r.G.PoolLen),
		free:     make([]int32, 0, r.G.PoolLen),
		skipped:  make([]int32, 0, MaxSubscribers+1),
	}
	head := atomic.LoadUint64(r.u64(offHead)) >> posShift
	n := uint64(r.P.RingLen)
	for i := range w.ringSlot {
		w.ringSlot[i] = -1
		e := atomic.LoadUint64(r.entry(i))
		if e == 0 {
			continue
		}
		pos, k := e>>posShift, int(e&slotMask)
		if k >= r.G.PoolLen {
			continue // corrupt entry: ignore, it will be overwritten
		}
		if pos == head+1 && uint64(i) == head%n && atomic.LoadUint64(r.slotVer(k)) == 2*pos {
			// committed by the dead owner but not announced: announce it.
			head = pos
		} else if pos > head {
			continue // impossible for a single writer; drop it
		}
		w.ringSlot[i] = int32(k)
		w.inRing[k] = true
	}
	for k := r.G.PoolLen - 1; k >= 0; k-- {
		if !w.inRing[k] {
			w.free = append(w.free, int32(k))
		}
	}
	w.head = head
	w.epoch = atomic.AddUint32(r.u32(offEpoch), 1)
	w.base = head
	atomic.StoreUint64(r.u64(offEpochBase), head)
	var headWord uint64
	if head > 0 {
		if k := w.ringSlot[(head-1)%n]; k >= 0 {
			headWord = head<<posShift | uint64(k)
		}
	}
	atomic.StoreUint64(r.u64(offHead), headWord)
	w.published = atomic.LoadUint64(r.u64(offPublished))
	w.blockedNs = atomic.LoadUint64(r.u64(offBlockedNs))
	w.timeouts = atomic.LoadUint64(r.u64(offTimeouts))
	w.dropped = atomic.LoadUint64(r.u64(offDropped))
	w.wake()
	return w, nil
}

// ReserveAll reserves every slot of the pool now (Slots+17 slots), so no
// later Acquire pays a first-use fallocate or fails with ErrNoSpace. A
// no-op for anonymous rings. Blocks for the fallocate (roughly 10 ms per
// 100 MiB on tmpfs).
func (w *Writer) ReserveAll() error {
	if w.reserved == nil {
		return nil
	}
	r := w.r
	if err := r.reserveSlots(0, r.G.PoolLen); err != nil {
		return err
	}
	for k := range w.reserved {
		w.reserved[k] = true
	}
	return nil
}

// Epoch is the writer's epoch.
func (w *Writer) Epoch() uint32 { return w.epoch }

// Acquire reserves the slot for the next position and returns its payload
// area (len MaxPayload). On a Reliable ring it first waits, until
// deadline (monotonic ns, 0 = forever), for every live subscriber to have
// consumed the position that the new entry evicts. 0 allocs.
func (w *Writer) Acquire(deadline int64, now func() int64) ([]byte, error) {
	if w.cur >= 0 {
		return nil, ErrLoanOutstanding
	}
	p := w.head + 1
	if w.r.P.Reliable && p > uint64(w.r.P.RingLen) {
		if err := w.waitRoom(p-uint64(w.r.P.RingLen), deadline, now); err != nil {
			return nil, err
		}
	}
	k := int(w.next)
	if k < 0 {
		k = w.pickFree()
	}
	w.next = -1
	if w.reserved != nil && !w.reserved[k] {
		// First use of a slot outside the working set by this writer:
		// commit its pages now, so a full tmpfs is ErrNoSpace instead
		// of SIGBUS at the first store. Once per slot per writer.
		if err := w.r.reserveSlots(k, 1); err != nil {
			// Still free, but put it at the bottom of the free list so
			// the next Acquire takes a reserved slot when one is free
			// again, instead of retrying this one.
			w.free = append(w.free, 0) // cap is PoolLen: no allocation
			copy(w.free[1:], w.free)
			w.free[0] = int32(k)
			return nil, err
		}
		w.reserved[k] = true
	}
	// Odd version first (RMW: ordered before the payload stores on every
	// architecture), so a seqlock reader never accepts a half-written slot.
	atomic.SwapUint64(w.r.slotVer(k), 2*p-1)
	w.cur, w.curPos = int32(k), p
	return w.r.payload(k, w.r.P.MaxPayload), nil
}

// pickFree pops the most recently freed slot that no subscriber holds.
// The candidate left the ring at an earlier Commit (a seq-cst store to its
// entry); reading the holds after that store pairs with the reader's
// hold-store-then-entry-reload: either we see the hold, or the reader sees
// the new entry and lets go.
func (w *Writer) pickFree() int {
	hi := int(atomic.LoadUint32(w.r.u32(offHiWater)))
	for {
		k := w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
		held := false
		for i := 0; i < hi; i++ {
			if atomic.LoadUint64(w.r.u64(w.r.sub(i)+subHold)) == uint64(k)+1 {
				held = true
				break
			}
		}
		if !held {
			for j := len(w.skipped) - 1; j >= 0; j-- {
				w.free = append(w.free, w.skipped[j])
			}
			w.skipped = w.skipped[:0]
			return int(k)
		}
		w.skipped = append(w.skipped, k)
	}
}

// Commit publishes the first n bytes of the acquired slot. 0 allocs; one
// futex syscall only if a subscriber sleeps.
func (w *Writer) Commit(n int, m Meta) {
	r, k, p := w.r, int(w.cur), w.curPos
	so := r.slotOff(k)
	*r.u64(so + slPos) = p
	*r.u64(so + slSeq) = p - w.base
	*r.u64(so + slSendMono) = uint64(m.SendMono)
	*r.u64(so + slSendClk) = uint64(m.SendClock)
	*r.u32(so + slEpoch) = w.epoch
	*r.u32(so + slLen) = uint32(n)
	*r.u32(so + slTopicID) = r.P.TopicID
	*r.u32(so + slClock) = uint32(m.Clock)
	r.mem[so+slVersion] = FrameVersion
	r.mem[so+slFlags] = m.Flags
	atomic.StoreUint64(r.slotVer(k), 2*p) // release: header and payload before
	i := int((p - 1) % uint64(r.P.RingLen))
	atomic.StoreUint64(r.entry(i), p<<posShift|uint64(k))
	if old := w.ringSlot[i]; old >= 0 {
		w.inRing[old] = false
		w.free = append(w.free, old)
	}
	w.ringSlot[i] = int32(k)
	w.inRing[k] = true
	w.cur = -1
	w.head = p
	// The head word carries the slot of the newest message, so a reader
	// that keeps up needs one cache line to find it.
	atomic.StoreUint64(r.u64(offHead), p<<posShift|uint64(k))
	w.published++
	atomic.StoreUint64(r.u64(offPublished), w.published)
	w.wake()
	// Pick the next slot now, after the wake: scanning the subscribers'
	// hold words costs cache-line transfers that would otherwise sit on
	// the next publish's latency path. Safe: every free slot was evicted
	// at or before this Commit, so the Dekker argument of pickFree holds.
	w.next = int32(w.pickFree())
}

func (w *Writer) wake() {
	if atomic.LoadUint32(w.r.u32(offWaiters)) != 0 {
		futex.Wake(w.r.u32(offHead), math.MaxInt32)
	}
}

// Abort gives the acquired slot back unpublished.
func (w *Writer) Abort() {
	if w.cur < 0 {
		return
	}
	k := int(w.cur)
	// Version 0 never matches a position: the slot holds nothing.
	atomic.StoreUint64(w.r.slotVer(k), 0)
	w.free = append(w.free, w.cur)
	w.cur = -1
}

// waitRoom waits until every live active subscriber has acked pos.
func (w *Writer) waitRoom(pos uint64, deadline int64, now func() int64) error {
	if w.slowest(pos) < 0 {
		return nil
	}
	r := w.r
	start := now()
	lastCheck := start
	spins := 0
	for {
		i := w.slowest(pos)
		if i < 0 {
			break
		}
		t := now()
		if deadline != 0 && t >= deadline {
			w.timeouts++
			atomic.StoreUint64(r.u64(offTimeouts), w.timeouts)
			w.addBlocked(t - start)
			return fmt.Errorf("%w: topic %q: subscriber %s still needs message %d", ErrTimeout, r.P.Topic, w.subDesc(i), pos)
		}
		if t-lastCheck > int64(5*time.Millisecond) {
			lastCheck = t
			w.dropDead()
			continue
		}
		if spins < 200 {
			spins++
			continue
		}
		atomic.StoreUint32(r.u32(offPubWait), 1)
		a := atomic.LoadUint32(r.u32(offAckWord))
		if w.slowest(pos) >= 0 {
			wait := 2 * time.Millisecond
			if deadline != 0 && time.Duration(deadline-t) < wait {
				wait = time.Duration(deadline - t)
			}
			futex.Wait(r.u32(offAckWord), a, wait)
		}
		atomic.StoreUint32(r.u32(offPubWait), 0)
	}
	w.addBlocked(now() - start)
	return nil
}

func (w *Writer) addBlocked(d int64) {
	if d > 0 {
		w.blockedNs += uint64(d)
		atomic.StoreUint64(w.r.u64(offBlockedNs), w.blockedNs)
	}
}

func (w *Writer) subDesc(i int) string {
	st := atomic.LoadUint64(w.r.u64(w.r.sub(i) + subState))
	return fmt.Sprintf("%q (pid %d)", subNameAt(w.r, i), st>>32)
}

// slowest returns the index of an active subscriber that has not acked
// pos, or -1.
func (w *Writer) slowest(pos uint64) int {
	r := w.r
	hi := int(atomic.LoadUint32(r.u32(offHiWater)))
	for i := 0; i < hi; i++ {
		so := r.sub(i)
		if uint32(atomic.LoadUint64(r.u64(so+subState))) != stActive {
			continue
		}
		if atomic.LoadUint64(r.u64(so+subAcked)) < pos {
			return i
		}
	}
	return -1
}

// dropDead frees table entries whose process is gone (PID checked with
// its start time against reuse).
func (w *Writer) dropDead() {
	r := w.r
	hi := int(atomic.LoadUint32(r.u32(offHiWater)))
	for i := 0; i < hi; i++ {
		so := r.sub(i)
		st := atomic.LoadUint64(r.u64(so + subState))
		if uint32(st) == stFree {
			continue
		}
		pid := int(st >> 32)
		if rt.Alive(pid, atomic.LoadUint64(r.u64(so+subStart))) {
			continue
		}
		atomic.StoreUint64(r.u64(so+subHold), 0)
		if atomic.CompareAndSwapUint64(r.u64(so+subState), st, 0) {
			w.dropped++
			atomic.StoreUint64(r.u64(offDropped), w.dropped)
			if w.OnDrop != nil {
				w.OnDrop(pid)
			}
		}
	}
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	r := w.r
	return WriterStats{
		Published: atomic.LoadUint64(r.u64(offPublished)),
		BlockedNs: atomic.LoadUint64(r.u64(offBlockedNs)),
		Timeouts:  atomic.LoadUint64(r.u64(offTimeouts)),
		Dropped:   atomic.LoadUint64(r.u64(offDropped)),
	}
}

// Close gives up the publisher role (the ring and its messages stay).
func (w *Writer) Close() {
	w.Abort()
	atomic.CompareAndSwapUint64(w.r.u64(offPubOwner), uint64(w.pid)<<32|1, 0)
}
