package shm

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/futex"
	"github.com/hilrig/hilrig/middleware/internal/rt"
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

// ReaderStats mirror the subscriber counters stored in the table entry.
type ReaderStats struct {
	Delivered, Lost, Overruns, TornRetries, Epochs uint64
}

// Reader is one subscriber of a Region. Not safe for concurrent use
// except Stats.
type Reader struct {
	r         *Region
	idx       int
	so        int
	next      uint64 // position wanted next
	depth     uint64 // keep-last: never more than depth behind head (best effort)
	held      int    // slot held, -1 none
	lastEpoch uint32

	delivered, lost, overruns, torn, epochs uint64
}

// NewReader claims a subscriber table entry for process pid and starts
// reading at the next message published (volatile: no history replay).
// depth is the keep-last depth (>= 1, <= RingLen). When the table is full
// it frees entries of dead processes first, then fails with ErrBusy.
func NewReader(r *Region, pid int, start uint64, name string, depth int, wait uint32) (*Reader, error) {
	if depth < 1 || depth > r.P.RingLen {
		depth = r.P.RingLen
	}
	idx := -1
	for pass := 0; pass < 2 && idx < 0; pass++ {
		for i := 0; i < MaxSubscribers; i++ {
			so := r.sub(i)
			st := atomic.LoadUint64(r.u64(so + subState))
			if uint32(st) != stFree {
				if pass == 0 || rt.Alive(int(st>>32), atomic.LoadUint64(r.u64(so+subStart))) {
					continue
				}
			}
			if atomic.CompareAndSwapUint64(r.u64(so+subState), st, uint64(pid)<<32|stJoining) {
				idx = i
				break
			}
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("%w: topic %q: subscriber table full (%d live subscribers)", ErrBusy, r.P.Topic, MaxSubscribers)
	}
	for {
		hw := atomic.LoadUint32(r.u32(offHiWater))
		if hw > uint32(idx) || atomic.CompareAndSwapUint32(r.u32(offHiWater), hw, uint32(idx)+1) {
			break
		}
	}
	so := r.sub(idx)
	atomic.StoreUint64(r.u64(so+subStart), start)
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
	atomic.StoreUint64(r.u64(so+subState), uint64(pid)<<32|stActive)
	rd := &Reader{r: r, idx: idx, so: so, next: head + 1, depth: uint64(depth), held: -1}
	rd.lastEpoch = atomic.LoadUint32(r.u32(offEpoch))
	return rd, nil
}

func subNameAt(r *Region, i int) string {
	so := r.sub(i)
	return string(bytes.TrimRight(r.mem[so+subName:so+subName+subNameMax], "\x00"))
}

// Ready reports whether a message is available without taking it.
func (rd *Reader) Ready() bool { return atomic.LoadUint64(rd.r.u64(offHead))>>posShift >= rd.next }

// TryNext takes the next message if one is available: it fills f, holds
// the slot (the publisher will not reuse it) and returns true; call
// Release when done with f.Payload. Never blocks, 0 allocs.
func (rd *Reader) TryNext(f *Frame) bool {
	r := rd.r
	n := uint64(r.P.RingLen)
	var lost uint64
	for {
		hw := atomic.LoadUint64(r.u64(offHead))
		head := hw >> posShift
		if head < rd.next {
			if lost > 0 {
				rd.addLost(lost)
			}
			return false
		}
		if head-rd.next >= rd.depth && !r.P.Reliable {
			// keep-last: skip to the newest depth messages.
			skip := head - rd.depth + 1 - rd.next
			lost += skip
			rd.next += skip
			rd.overruns++
			atomic.StoreUint64(r.u64(rd.so+subOverruns), rd.overruns)
		}
		if head-rd.next >= n {
			// lapped by the ring (reliable reader dropped as dead, or a
			// restarted segment): resynchronise on the oldest kept entry.
			skip := head - n + 1 - rd.next
			lost += skip
			rd.next += skip
			rd.overruns++
			atomic.StoreUint64(r.u64(rd.so+subOverruns), rd.overruns)
		}
		want := rd.next
		ep := r.entry(int((want - 1) % n))
		var k int
		if head == want {
			// Fast path, the newest message: its slot is in the head word
			// (one cache line). Hold it, then check that head did not move
			// on or, if it did, that the entry still maps want to k: either
			// way the eviction of k cannot precede our hold store.
			k = int(hw & slotMask)
			atomic.StoreUint64(r.u64(rd.so+subHold), uint64(k)+1)
			if atomic.LoadUint64(r.u64(offHead)) != hw && atomic.LoadUint64(ep) != want<<posShift|uint64(k) {
				atomic.StoreUint64(r.u64(rd.so+subHold), 0)
				rd.tornRetry()
				continue
			}
		} else {
			e := atomic.LoadUint64(ep)
			if e>>posShift != want {
				// overwritten since we read head (lapped): go round again.
				rd.tornRetry()
				if e>>posShift < want {
					// head covers want but the entry never got it (corrupt
					// ring): count it lost rather than spin on it.
					rd.next++
					lost++
				}
				continue
			}
			k = int(e & slotMask)
			atomic.StoreUint64(r.u64(rd.so+subHold), uint64(k)+1)
			if atomic.LoadUint64(ep) != e {
				atomic.StoreUint64(r.u64(rd.so+subHold), 0)
				rd.tornRetry()
				continue
			}
		}
		// The slot is ours until Release. Its seqlock must say "position
		// want, committed"; anything else is a protocol violation (e.g. a
		// writer that died mid-write, seen through a corrupt ring) and is
		// never delivered.
		so := r.slotOff(k)
		if atomic.LoadUint64(r.slotVer(k)) != 2*want || *r.u64(so + slPos) != want {
			atomic.StoreUint64(r.u64(rd.so+subHold), 0)
			rd.tornRetry()
			rd.next++
			lost++
			continue
		}
		f.Pos = want
		f.Seq = *r.u64(so + slSeq)
		f.SendMono = int64(*r.u64(so + slSendMono))
		f.SendClock = int64(*r.u64(so + slSendClk))
		f.Epoch = *r.u32(so + slEpoch)
		f.Len = *r.u32(so + slLen)
		f.TopicID = *r.u32(so + slTopicID)
		f.Clock = int32(*r.u32(so + slClock))
		f.Version = r.mem[so+slVersion]
		f.Flags = r.mem[so+slFlags]
		ln := int(f.Len)
		if ln > r.P.MaxPayload {
			ln = r.P.MaxPayload
		}
		f.Payload = r.payload(k, ln)
		f.Lost = lost
		if lost > 0 {
			rd.addLost(lost)
		}
		if f.Epoch != rd.lastEpoch {
			rd.lastEpoch = f.Epoch
			rd.epochs++
			atomic.StoreUint64(r.u64(rd.so+subEpochs), rd.epochs)
		}
		rd.held = k
		return true
	}
}

func (rd *Reader) addLost(n uint64) {
	rd.lost += n
	atomic.StoreUint64(rd.r.u64(rd.so+subLost), rd.lost)
}

func (rd *Reader) tornRetry() {
	rd.torn++
	atomic.StoreUint64(rd.r.u64(rd.so+subTorn), rd.torn)
}

// Release ends the hold taken by TryNext, acks the position and wakes a
// Reliable publisher that waits for it. 0 allocs.
func (rd *Reader) Release() {
	if rd.held < 0 {
		return
	}
	r := rd.r
	pos := rd.next
	rd.held = -1
	rd.next++
	rd.delivered++
	atomic.StoreUint64(r.u64(rd.so+subHold), 0)
	atomic.StoreUint64(r.u64(rd.so+subDelivered), rd.delivered)
	atomic.StoreUint64(r.u64(rd.so+subAcked), pos)
	if atomic.LoadUint32(r.u32(offPubWait)) != 0 {
		atomic.AddUint32(r.u32(offAckWord), 1)
		futex.Wake(r.u32(offAckWord), 1)
	}
}

// Sleep blocks on the futex until head moves past what we have read or
// timeout passes. It registers in the waiter count so the publisher
// issues a wake syscall only when someone sleeps. 0 allocs.
func (rd *Reader) Sleep(timeout time.Duration) {
	r := rd.r
	atomic.AddUint32(r.u32(offWaiters), 1)
	h := atomic.LoadUint64(r.u64(offHead))
	if h>>posShift < rd.next {
		futex.Wait(r.u32(offHead), uint32(h), timeout)
	}
	atomic.AddUint32(r.u32(offWaiters), ^uint32(0))
}

// Stats returns the counters (safe from any goroutine).
func (rd *Reader) Stats() ReaderStats {
	r, so := rd.r, rd.so
	return ReaderStats{
		Delivered:   atomic.LoadUint64(r.u64(so + subDelivered)),
		Lost:        atomic.LoadUint64(r.u64(so + subLost)),
		Overruns:    atomic.LoadUint64(r.u64(so + subOverruns)),
		TornRetries: atomic.LoadUint64(r.u64(so + subTorn)),
		Epochs:      atomic.LoadUint64(r.u64(so + subEpochs)),
	}
}

// Close releases any hold and frees the table entry.
func (rd *Reader) Close() {
	r := rd.r
	atomic.StoreUint64(r.u64(rd.so+subHold), 0)
	atomic.StoreUint64(r.u64(rd.so+subState), 0)
	if atomic.LoadUint32(r.u32(offPubWait)) != 0 {
		atomic.AddUint32(r.u32(offAckWord), 1)
		futex.Wake(r.u32(offAckWord), 1)
	}
}

// Interrupt wakes every sleeper on the ring (they re-check their state).
func (rd *Reader) Interrupt() { futex.Wake(rd.r.u32(offHead), 1<<30) }
