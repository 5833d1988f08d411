package shm

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/futex"
)

// Frame is a held message: header fields copied out of the slot and a
// read-only payload view valid until Release.
type Frame struct {
	Pos       uint64
	Seq       uint64
	SendMono  int64
	SendClock int64
	Epoch     uint32
	Len       uint32
	TopicID   uint32
	Clock     int32
	Version   uint8
	Flags     uint8
	Lost      uint64 // positions skipped just before this one
	Payload   []byte
}

// ReaderStats are one Reader's counters (copied into its table entry for
// other processes).
type ReaderStats struct {
	Delivered, Lost, Overruns, TornRetries, Epochs uint64
}

// Reader is one subscriber of a Region. Not safe for concurrent use
// except Stats.
type Reader struct {
	r         *Region
	idx       int
	so        int
	lease     leaseHold // lease on the table entry (lease.go)
	state     uint64    // our state word: gen<<32 | stActive
	next      uint64    // position wanted next
	depth     uint64    // keep-last: never more than depth behind head (best effort)
	held      int       // slot held, -1 none
	lastEpoch uint32
	// err is set once the segment is found corrupt; every later call
	// returns it.
	err error

	// The counters live in process memory, where Stats reads them; the
	// table entry holds a copy for other processes (hilrig shm ls) that
	// is never read back (see counter).
	delivered, lost, overruns, torn, epochs counter
}

// maxSteps bounds the work of one TryNext: every step either returns,
// advances next, or retries after the publisher moved (a torn retry). A
// call that runs out returns "nothing yet" and the caller's wait loop
// (which observes its context) comes back, so nothing spins unbounded
// whatever the segment holds.
const maxSteps = 64

// NewReader claims a subscriber table entry for process pid (its
// getpid(), recorded for display only) and starts reading at the next
// message published (volatile: no history replay). depth is the
// keep-last depth (>= 1, <= RingLen). It takes the first entry whose
// lease nobody holds (lease.go): free, or left by a dead process in any
// PID namespace. When all 16 are held it fails with ErrBusy. The caller
// must run with debug.SetPanicOnFault (see fault.go).
func NewReader(r *Region, pid int, name string, depth int, wait uint32) (*Reader, error) {
	if depth < 1 || depth > r.P.RingLen {
		depth = r.P.RingLen
	}
	idx := -1
	var lease leaseHold
	for i := 0; i < MaxSubscribers && idx < 0; i++ {
		h, ok, err := r.tryLease(r.sub(i) + subState)
		if err != nil {
			return nil, err
		}
		if ok {
			idx, lease = i, h
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("%w: topic %q: subscriber table full (%d live subscribers)", ErrBusy, r.P.Topic, MaxSubscribers)
	}
	so := r.sub(idx)
	// The lease makes the entry ours; the CAS only races with a
	// publisher freeing the dead previous owner's state (which keeps the
	// generation), so it succeeds within two attempts, and the high-water
	// CAS races only with the other joiners (at most 15 moves). More
	// failures mean someone else keeps writing those words.
	var state uint64
	claimed, raised := false, false
	for try := 0; try < 64 && !claimed; try++ {
		old := atomic.LoadUint64(r.u64(so + subState))
		state = (old>>32 + 1) << 32
		claimed = atomic.CompareAndSwapUint64(r.u64(so+subState), old, state|stJoining)
	}
	for try := 0; try < 64 && claimed && !raised; try++ {
		hw := atomic.LoadUint32(r.u32(offHiWater))
		raised = hw > uint32(idx) || atomic.CompareAndSwapUint32(r.u32(offHiWater), hw, uint32(idx)+1)
	}
	if !claimed || !raised {
		r.dropLease(lease)
		return nil, r.corrupt("subscriber table entry %d or the high-water mark keeps changing under a subscriber that holds the entry's lease", idx)
	}
	atomic.StoreUint64(r.u64(so+subPID), uint64(pid))
	atomic.StoreUint64(r.u64(so+subHold), 0)
	for _, off := range []int{subDelivered, subLost, subOverruns, subTorn, subEpochs} {
		atomic.StoreUint64(r.u64(so+off), 0)
	}
	atomic.StoreUint32(r.u32(so+subWait), wait)
	nb := r.mem[so+subName : so+subName+subNameMax]
	clear(nb)
	copy(nb[:subNameMax-1], name)
	head := atomic.LoadUint64(r.u64(offHead)) >> posShift
	atomic.StoreUint64(r.u64(so+subAcked), head)
	atomic.StoreUint64(r.u64(so+subState), state|stActive)
	rd := &Reader{r: r, idx: idx, so: so, lease: lease, state: state | stActive, next: head + 1, depth: uint64(depth), held: -1}
	rd.lastEpoch = atomic.LoadUint32(r.u32(offEpoch))
	return rd, nil
}

func subNameAt(r *Region, i int) string {
	so := r.sub(i)
	return string(bytes.TrimRight(r.mem[so+subName:so+subName+subNameMax], "\x00"))
}

// fail records err as the reader's permanent error, drops any hold, and
// returns it.
func (rd *Reader) fail(err error) error {
	if rd.err == nil {
		rd.err = err
	}
	rd.held = -1
	return rd.err
}

// Err returns the error that failed the reader, or nil.
func (rd *Reader) Err() error { return rd.err }

// Fault records a memory fault recovered while using the reader (see
// fault.go) as its permanent error and returns it. Any other panic value
// is re-panicked.
func (rd *Reader) Fault(v any) error {
	err := rd.r.Fault(v)
	rd.err = err
	rd.held = -1
	return err
}

// CheckSize fails the reader with ErrCorrupt naming the file if the
// segment file is now shorter than its layout. A reader that waits for
// the next message touches only the head word; this finds a segment
// truncated under it (whose publisher is then failed too) without waiting
// for a message that will not come. One fstat; a no-op for anonymous rings.
func (rd *Reader) CheckSize() error {
	if rd.err != nil {
		return rd.err
	}
	if size, ok := rd.r.shrunk(); ok {
		return rd.fail(rd.r.corrupt("the file shrank to %d bytes under the mapping, the layout needs %d", size, rd.r.G.TotalSize))
	}
	return nil
}

// Ready reports whether a message is available without taking it.
func (rd *Reader) Ready() bool { return atomic.LoadUint64(rd.r.u64(offHead))>>posShift >= rd.next }

// TryNext takes the next message if one is available: it fills f, holds
// the slot (the publisher will not reuse it) and returns true; call
// Release when done with f.Payload. Never blocks, bounded work, 0 allocs.
//
// Every value read from the segment is checked before use against what
// a publisher can write (positions never go back, slot indices inside
// the pool, an entry at the position the head implies, a committed slot
// of that position, a length within MaxPayload); a violation fails the
// reader with ErrCorrupt naming the file, and nothing of it is delivered.
func (rd *Reader) TryNext(f *Frame) (bool, error) {
	if rd.err != nil {
		return false, rd.err
	}
	r := rd.r
	n := uint64(r.P.RingLen)
	pool := uint64(r.G.PoolLen)
	// Our own table entry, and the high-water mark the publisher scans
	// holds up to, are only written by us (and the mark by joining
	// subscribers, upwards): if they changed, the publisher may no
	// longer see our hold. Same cache lines as our hold and the head.
	if st := atomic.LoadUint64(r.u64(rd.so + subState)); st != rd.state {
		return false, rd.fail(r.corrupt("subscriber table entry %d holds state %#x, this subscriber wrote %#x", rd.idx, st, rd.state))
	}
	if hi := atomic.LoadUint32(r.u32(offHiWater)); hi <= uint32(rd.idx) || hi > MaxSubscribers {
		return false, rd.fail(r.corrupt("subscriber high-water mark %d, this subscriber is entry %d of %d", hi, rd.idx, MaxSubscribers))
	}
	var lost uint64
	for step := 0; step < maxSteps; step++ {
		hw := atomic.LoadUint64(r.u64(offHead))
		head := hw >> posShift
		if head < rd.next {
			if head+1 < rd.next {
				return false, rd.fail(r.corrupt("head went back to position %d, this subscriber already read %d", head, rd.next-1))
			}
			break
		}
		if hw&slotMask >= pool {
			return false, rd.fail(r.corrupt("head word %#x names slot %d of a pool of %d", hw, hw&slotMask, pool))
		}
		if (head-rd.next >= rd.depth && !r.P.Reliable) || head-rd.next >= n {
			// About to skip on the head's word: check it against its ring
			// entry first (stored before it; a later publish can only have
			// moved that entry on by multiples of n), so a forged head
			// cannot make us skip what was never published.
			e := atomic.LoadUint64(r.entry(int((head - 1) % n)))
			if ep := e >> posShift; ep < head || (ep-head)%n != 0 || (ep == head && e != hw) {
				return false, rd.fail(r.corrupt("head word %#x (position %d) but ring entry %d holds %#x", hw, head, (head-1)%n, e))
			}
		}
		if head-rd.next >= rd.depth && !r.P.Reliable {
			// keep-last: skip to the newest depth messages.
			skip := head - rd.depth + 1 - rd.next
			lost += skip
			rd.next += skip
			rd.overruns.add(r.u64(rd.so+subOverruns), 1)
		}
		if head-rd.next >= n {
			// lapped by the ring (a restarted segment, or a reliable
			// publisher that timed out on us): resynchronise on the
			// oldest kept entry.
			skip := head - n + 1 - rd.next
			lost += skip
			rd.next += skip
			rd.overruns.add(r.u64(rd.so+subOverruns), 1)
		}
		want := rd.next
		ep := r.entry(int((want - 1) % n))
		var k uint64
		if head == want {
			// Fast path, the newest message: its slot is in the head word
			// (one cache line). Hold it, then check that head did not move
			// on or, if it did, that the entry still maps want to k: either
			// way the eviction of k cannot precede our hold store.
			k = hw & slotMask
			atomic.StoreUint64(r.u64(rd.so+subHold), k+1)
			if atomic.LoadUint64(r.u64(offHead)) != hw && atomic.LoadUint64(ep) != want<<posShift|k {
				atomic.StoreUint64(r.u64(rd.so+subHold), 0)
				rd.tornRetry()
				continue
			}
		} else {
			e := atomic.LoadUint64(ep)
			if epos := e >> posShift; epos != want {
				// The entry of want was stored before any head >= want,
				// and later publishes move it on by multiples of n, at
				// most one past the head they announce next.
				if epos < want || (epos-want)%n != 0 || epos > atomic.LoadUint64(r.u64(offHead))>>posShift+1 {
					return false, rd.fail(r.corrupt("ring entry %d holds %#x (position %d) where position %d or a later one of that entry was published", (want-1)%n, e, epos, want))
				}
				// Overwritten since we read head (or by a message its dead
				// publisher committed but never announced): want is gone.
				rd.next++
				lost++
				continue
			}
			k = e & slotMask
			if k >= pool {
				return false, rd.fail(r.corrupt("ring entry %d holds %#x: slot %d of a pool of %d", (want-1)%n, e, k, pool))
			}
			atomic.StoreUint64(r.u64(rd.so+subHold), k+1)
			if atomic.LoadUint64(ep) != e {
				atomic.StoreUint64(r.u64(rd.so+subHold), 0)
				rd.tornRetry()
				continue
			}
		}
		// The slot is ours until Release. Its seqlock must say "position
		// want, committed": the entry or head that named it was stored
		// after the commit, and our hold keeps the publisher off it. Any
		// other value was not written by a publisher.
		so := r.slotOff(int(k))
		if v := atomic.LoadUint64(r.slotVer(int(k))); v != 2*want || *r.u64(so + slPos) != want {
			atomic.StoreUint64(r.u64(rd.so+subHold), 0)
			return false, rd.fail(r.corrupt("slot %d has version %d and position %d, its ring entry says position %d committed", k, v, *r.u64(so + slPos), want))
		}
		f.Len = *r.u32(so + slLen)
		if int64(f.Len) > int64(r.P.MaxPayload) {
			atomic.StoreUint64(r.u64(rd.so+subHold), 0)
			return false, rd.fail(r.corrupt("slot %d (position %d) says %d payload bytes, the ring holds at most %d", k, want, f.Len, r.P.MaxPayload))
		}
		f.Pos = want
		f.Seq = *r.u64(so + slSeq)
		f.SendMono = int64(*r.u64(so + slSendMono))
		f.SendClock = int64(*r.u64(so + slSendClk))
		f.Epoch = *r.u32(so + slEpoch)
		f.TopicID = *r.u32(so + slTopicID)
		f.Clock = int32(*r.u32(so + slClock))
		f.Version = r.mem[so+slVersion]
		f.Flags = r.mem[so+slFlags]
		f.Payload = r.payload(int(k), int(f.Len))
		f.Lost = lost
		if lost > 0 {
			rd.addLost(lost)
		}
		if f.Epoch != rd.lastEpoch {
			rd.lastEpoch = f.Epoch
			rd.epochs.add(r.u64(rd.so+subEpochs), 1)
		}
		rd.held = int(k)
		return true, nil
	}
	if lost > 0 {
		rd.addLost(lost)
	}
	return false, nil
}

func (rd *Reader) addLost(n uint64) {
	rd.lost.add(rd.r.u64(rd.so+subLost), n)
}

func (rd *Reader) tornRetry() {
	rd.torn.add(rd.r.u64(rd.so+subTorn), 1)
}

// Release ends the hold taken by TryNext, acks the position and wakes a
// Reliable publisher that waits for it. 0 allocs.
//
// It first checks that the held slot still has the version TryNext
// accepted and that our hold and state words are as we wrote them: if
// not, the publisher may have reused the slot while f.Payload was read
// (the segment was overwritten under us), and Release fails the reader
// with ErrCorrupt, so the caller learns that the message just read may be
// torn.
func (rd *Reader) Release() error {
	if rd.held < 0 {
		return rd.err
	}
	r := rd.r
	k := rd.held
	pos := rd.next
	if v, h, st := atomic.LoadUint64(r.slotVer(k)), atomic.LoadUint64(r.u64(rd.so+subHold)), atomic.LoadUint64(r.u64(rd.so+subState)); v != 2*pos || h != uint64(k)+1 || st != rd.state {
		atomic.StoreUint64(r.u64(rd.so+subHold), 0)
		return rd.fail(r.corrupt("while position %d was read from slot %d, the slot version became %d, the hold word %d, the state word %#x (expected %d, %d, %#x): the message may have been torn",
			pos, k, v, h, st, 2*pos, k+1, rd.state))
	}
	rd.held = -1
	rd.next++
	atomic.StoreUint64(r.u64(rd.so+subHold), 0)
	rd.delivered.add(r.u64(rd.so+subDelivered), 1)
	atomic.StoreUint64(r.u64(rd.so+subAcked), pos)
	if atomic.LoadUint32(r.u32(offPubWait)) != 0 {
		atomic.AddUint32(r.u32(offAckWord), 1)
		futex.Wake(r.u32(offAckWord), 1)
	}
	return nil
}

// Sleep blocks on the futex until head moves past what we have read or
// timeout passes. It registers in the waiter count so the publisher
// issues a wake syscall only when someone sleeps. 0 allocs.
func (rd *Reader) Sleep(timeout time.Duration) { rd.sleep(timeout, false) }

// SleepHeld is Sleep keeping the thread's Go scheduler processor (see
// futex.WaitHeld); the caller holds a reservation from rt.HoldP.
func (rd *Reader) SleepHeld(timeout time.Duration) { rd.sleep(timeout, true) }

func (rd *Reader) sleep(timeout time.Duration, held bool) {
	r := rd.r
	atomic.AddUint32(r.u32(offWaiters), 1)
	h := atomic.LoadUint64(r.u64(offHead))
	if h>>posShift < rd.next {
		if held {
			futex.WaitHeld(r.u32(offHead), uint32(h), timeout)
		} else {
			futex.Wait(r.u32(offHead), uint32(h), timeout)
		}
	}
	atomic.AddUint32(r.u32(offWaiters), ^uint32(0))
}

// Stats returns the counters (safe from any goroutine). They are this
// process's own counts, never the copies in the segment, which any writer
// of the file can overwrite. Does not touch the mapping.
func (rd *Reader) Stats() ReaderStats {
	return ReaderStats{
		Delivered:   rd.delivered.load(),
		Lost:        rd.lost.load(),
		Overruns:    rd.overruns.load(),
		TornRetries: rd.torn.load(),
		Epochs:      rd.epochs.load(),
	}
}

// Close releases any hold, frees the table entry (keeping its
// generation) and gives up the entry's lease. On a failed reader it only
// gives up the lease: the mapping may be gone.
func (rd *Reader) Close() {
	r := rd.r
	if rd.err == nil {
		atomic.StoreUint64(r.u64(rd.so+subHold), 0)
		atomic.StoreUint64(r.u64(rd.so+subState), rd.state&^0xffffffff|stFree)
		if atomic.LoadUint32(r.u32(offPubWait)) != 0 {
			atomic.AddUint32(r.u32(offAckWord), 1)
			futex.Wake(r.u32(offAckWord), 1)
		}
	}
	r.dropLease(rd.lease)
}

// Interrupt wakes every sleeper on the ring (they re-check their state).
func (rd *Reader) Interrupt() { futex.Wake(rd.r.u32(offHead), 1<<30) }
