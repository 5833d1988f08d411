package shm

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/futex"
)

// Meta is what the caller stamps into a frame header at commit.
type Meta struct {
	SendMono  int64
	SendClock int64
	Clock     int32
	Flags     uint8
}

// WriterStats are one Writer's counters (its own, from its start; the
// segment's copies sum every publisher the segment had).
type WriterStats struct {
	Published, BlockedNs, Timeouts, Dropped uint64
}

// Writer is the single publisher of a Region. Not safe for concurrent use.
type Writer struct {
	r     *Region
	pid   int
	lease leaseHold // the publisher lease (lease.go)
	owner uint64    // our owner word
	// err is set once the segment is found corrupt; every later call
	// returns it.
	err      error
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

	// Counters: see counter. Their copies in the segment go on from the
	// previous publisher's (the segment's totals, base); Stats counts
	// this writer's own.
	published, blockedNs, timeouts, dropped counter
}

// NewWriter claims the publisher role of r for process pid (its getpid(),
// recorded for display only). If a live publisher holds the ring's
// publisher lease (lease.go) it fails with ErrBusy, whatever PID namespace
// either lives in. A dead owner's ring is recovered: a message it
// committed but had not announced is announced, the slot it was writing is
// reclaimed, and a new epoch starts at the current head so positions stay
// continuous. A ring whose head word or entries are inconsistent (written
// by something other than a publisher) is refused with ErrCorrupt naming
// the file.
//
// On a file-backed ring it first reserves the pool's working set (see
// reserve.go) and fails with ErrNoSpace, naming the file, if the
// filesystem cannot hold it. The caller must run with
// debug.SetPanicOnFault and hand a recovered panic to Region.Fault (see
// fault.go).
func NewWriter(r *Region, pid int) (*Writer, error) {
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
	lease, ok, err := r.tryLease(offPubOwner)
	if err != nil {
		return nil, err
	}
	if !ok {
		owner := atomic.LoadUint64(r.u64(offPubOwner))
		return nil, fmt.Errorf("%w: topic %q already has a live publisher (pid %d in its own PID namespace; it holds the publisher lease of %s)", ErrBusy, r.P.Topic, owner>>32, r.name)
	}
	w := &Writer{
		r: r, pid: pid, cur: -1, next: -1, reserved: reserved, lease: lease,
		owner:    uint64(uint32(pid))<<32 | 1,
		ringSlot: make([]int32, r.P.RingLen),
		inRing:   make([]bool, r.G.PoolLen),
		free:     make([]int32, 0, r.G.PoolLen),
		skipped:  make([]int32, 0, MaxSubscribers+1),
	}
	if err := w.recover(); err != nil {
		r.dropLease(lease)
		return nil, err
	}
	// We hold the lease, so any previous owner is dead: the owner word is
	// ours to overwrite (display and a corruption check in Acquire).
	atomic.StoreUint64(r.u64(offPubOwner), w.owner)
	w.epoch = atomic.AddUint32(r.u32(offEpoch), 1)
	w.base = w.head
	atomic.StoreUint64(r.u64(offEpochBase), w.head)
	var headWord uint64
	if w.head > 0 {
		headWord = w.head<<posShift | uint64(w.ringSlot[(w.head-1)%uint64(r.P.RingLen)])
	}
	atomic.StoreUint64(r.u64(offHead), headWord)
	w.published.base = atomic.LoadUint64(r.u64(offPublished))
	w.blockedNs.base = atomic.LoadUint64(r.u64(offBlockedNs))
	w.timeouts.base = atomic.LoadUint64(r.u64(offTimeouts))
	w.dropped.base = atomic.LoadUint64(r.u64(offDropped))
	w.wake()
	return w, nil
}

// recover rebuilds the writer's private view of the ring (which slot each
// entry references, the free list, the head) from the segment left by the
// previous publisher, and checks it is one a publisher can have left:
// every index in bounds, no slot in two entries, each entry holding the
// newest position of its index that is not past head, and its slot
// committed with that position. Only a message committed but not yet
// announced (the owner died between the entry and the head store) may be
// one past head; it is announced.
func (w *Writer) recover() error {
	r := w.r
	n := uint64(r.P.RingLen)
	pool := uint64(r.G.PoolLen)
	hw := atomic.LoadUint64(r.u64(offHead))
	head := hw >> posShift
	if hw&slotMask >= pool {
		return r.corrupt("head word %#x names slot %d of a pool of %d", hw, hw&slotMask, pool)
	}
	if e := atomic.LoadUint64(r.entry(int(head % n))); e>>posShift == head+1 && e&slotMask < pool &&
		atomic.LoadUint64(r.slotVer(int(e&slotMask))) == 2*(head+1) {
		head++ // committed by the dead owner but not announced: announce it
	} else if hw != 0 && head > 0 {
		if e := atomic.LoadUint64(r.entry(int((head - 1) % n))); e != hw {
			return r.corrupt("head word %#x (position %d, slot %d) but ring entry %d holds %#x", hw, head, hw&slotMask, (head-1)%n, e)
		}
	}
	for i := range w.ringSlot {
		w.ringSlot[i] = -1
		e := atomic.LoadUint64(r.entry(i))
		// The newest position p <= head with (p-1) % n == i, 0 if none.
		var want uint64
		if head > uint64(i) {
			want = head - (head-1-uint64(i))%n
		}
		pos, k := e>>posShift, e&slotMask
		if e == 0 && want == 0 {
			continue
		}
		if pos != want || k >= pool {
			return r.corrupt("ring entry %d holds %#x (position %d, slot %d), expected position %d of a pool of %d slots at head %d", i, e, pos, k, want, pool, head)
		}
		if w.inRing[k] {
			return r.corrupt("slot %d is in two ring entries (entry %d is one)", k, i)
		}
		if v := atomic.LoadUint64(r.slotVer(int(k))); v != 2*pos {
			return r.corrupt("slot %d in ring entry %d has version %d, expected %d (position %d committed)", k, i, v, 2*pos, pos)
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
	return nil
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
	if w.err != nil {
		return nil, w.err
	}
	if w.cur >= 0 {
		return nil, ErrLoanOutstanding
	}
	// The owner word is ours while we hold the lease (one load of a line
	// only the publisher writes): anything else was written by someone
	// who is not a publisher.
	if o := atomic.LoadUint64(w.r.u64(offPubOwner)); o != w.owner {
		return nil, w.fail(w.r.corrupt("publisher owner word is %#x, this publisher wrote %#x", o, w.owner))
	}
	p := w.head + 1
	if w.r.P.Reliable && p > uint64(w.r.P.RingLen) {
		if err := w.waitRoom(p-uint64(w.r.P.RingLen), deadline, now); err != nil {
			return nil, err
		}
	}
	k := int(w.next)
	if k < 0 {
		if k = w.pickFree(); k < 0 {
			return nil, w.err
		}
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
//
// The pool has MaxSubscribers+1 slots more than the ring and each table
// entry's hold word names at most one slot, so a free slot always exists
// whatever the hold words say. A high-water mark above the table size
// was not written by a subscriber: the writer fails with ErrCorrupt
// (sets w.err) and returns -1.
func (w *Writer) pickFree() int {
	hi := int(atomic.LoadUint32(w.r.u32(offHiWater)))
	if hi > MaxSubscribers {
		w.fail(w.r.corrupt("subscriber high-water mark %d, the table has %d entries", hi, MaxSubscribers))
		return -1
	}
	// The state and hold words share a cache line: checking that they
	// hold values a subscriber writes costs no extra transfer.
	pool := uint64(w.r.G.PoolLen)
	for i := 0; i < hi; i++ {
		so := w.r.sub(i)
		if st, h := uint32(atomic.LoadUint64(w.r.u64(so+subState))), atomic.LoadUint64(w.r.u64(so+subHold)); st > stActive || h > pool {
			w.fail(w.r.corrupt("subscriber table entry %d in state %d holding %d (slot+1, pool of %d)", i, st, h, pool))
			return -1
		}
	}
	for len(w.free) > 0 {
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
	// Unreachable by the count above; kept so a bug is an error, not an
	// index panic.
	w.free = append(w.free, w.skipped...)
	w.skipped = w.skipped[:0]
	w.fail(w.r.corrupt("every free slot is held by a subscriber"))
	return -1
}

// fail records err as the writer's permanent error and returns it.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Err returns the error that failed the writer, or nil.
func (w *Writer) Err() error { return w.err }

// Fault records a memory fault recovered while using the writer (see
// fault.go) as its permanent error and returns it. Any other panic value
// is re-panicked.
func (w *Writer) Fault(v any) error {
	err := w.r.Fault(v)
	w.err = err // a fault supersedes an earlier error: the mapping is gone
	return err
}

// LoanSeq is the sequence number the loaned slot will carry when
// committed (valid between Acquire and Commit/Abort). 0 allocs.
func (w *Writer) LoanSeq() uint64 { return w.curPos - w.base }

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
	w.published.add(r.u64(offPublished), 1)
	w.wake()
	// Pick the next slot now, after the wake: scanning the subscribers'
	// hold words costs cache-line transfers that would otherwise sit on
	// the next publish's latency path. Safe: every free slot was evicted
	// at or before this Commit, so the Dekker argument of pickFree holds.
	// (-1 on a corrupt table: the next Acquire returns w.err.)
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
//
// A subscriber counts until its lease is found free (checked every 5 ms
// of waiting): a live one, in whatever PID namespace, is waited for until
// deadline, never dropped.
func (w *Writer) waitRoom(pos uint64, deadline int64, now func() int64) error {
	switch w.slowest(pos) {
	case -1:
		return nil
	case -2:
		return w.err
	}
	r := w.r
	start := now()
	lastCheck := start
	spins := 0
	for {
		i := w.slowest(pos)
		if i == -2 {
			w.addBlocked(now() - start)
			return w.err
		}
		if i < 0 {
			break
		}
		t := now()
		if deadline != 0 && t >= deadline {
			w.timeouts.add(r.u64(offTimeouts), 1)
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
		w.blockedNs.add(w.r.u64(offBlockedNs), uint64(d))
	}
}

func (w *Writer) subDesc(i int) string {
	pid := atomic.LoadUint64(w.r.u64(w.r.sub(i) + subPID))
	return fmt.Sprintf("%q (pid %d in its PID namespace)", subNameAt(w.r, i), pid)
}

// slowest returns the index of an active subscriber that has not acked
// pos, or -1. A table entry in a state no subscriber writes, or one that
// acked a position never published, fails the writer with ErrCorrupt
// (-2).
func (w *Writer) slowest(pos uint64) int {
	r := w.r
	hi := int(atomic.LoadUint32(r.u32(offHiWater)))
	if hi > MaxSubscribers {
		w.fail(r.corrupt("subscriber high-water mark %d, the table has %d entries", hi, MaxSubscribers))
		return -2
	}
	for i := 0; i < hi; i++ {
		so := r.sub(i)
		switch st := uint32(atomic.LoadUint64(r.u64(so + subState))); st {
		case stFree, stJoining:
			continue
		case stActive:
		default:
			w.fail(r.corrupt("subscriber table entry %d in state %d", i, st))
			return -2
		}
		if a := atomic.LoadUint64(r.u64(so + subAcked)); a < pos {
			return i
		} else if a > w.head {
			w.fail(r.corrupt("subscriber table entry %d acked position %d, only %d published", i, a, w.head))
			return -2
		}
	}
	return -1
}

// dropDead frees table entries whose lease nobody holds (their process
// died; lease.go). It leaves their hold words alone: a hold names one of
// the MaxSubscribers spare slots, and clearing it could race with a new
// owner of the entry that already holds a slot. The CAS compares the
// whole state word, generation included, so an entry claimed again since
// we read it is not freed.
func (w *Writer) dropDead() {
	r := w.r
	hi := min(int(atomic.LoadUint32(r.u32(offHiWater))), MaxSubscribers)
	for i := 0; i < hi; i++ {
		so := r.sub(i)
		st := atomic.LoadUint64(r.u64(so + subState))
		if uint32(st) == stFree || r.leaseHeld(so+subState) {
			continue
		}
		if atomic.CompareAndSwapUint64(r.u64(so+subState), st, st&^0xffffffff|stFree) {
			w.dropped.add(r.u64(offDropped), 1)
			if w.OnDrop != nil {
				w.OnDrop(int(atomic.LoadUint64(r.u64(so + subPID))))
			}
		}
	}
}

// Stats returns the writer's counters. Safe from any goroutine (the
// writer's own goroutine may publish meanwhile); it reads process memory
// only, never the segment's copies, which any writer of the file can
// overwrite.
func (w *Writer) Stats() WriterStats {
	return WriterStats{
		Published: w.published.load(),
		BlockedNs: w.blockedNs.load(),
		Timeouts:  w.timeouts.load(),
		Dropped:   w.dropped.load(),
	}
}

// Close gives up the publisher role (the ring and its messages stay).
func (w *Writer) Close() {
	if w.err == nil {
		w.Abort()
		atomic.CompareAndSwapUint64(w.r.u64(offPubOwner), w.owner, 0)
	}
	w.r.dropLease(w.lease)
}
