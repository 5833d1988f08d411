package middleware

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/middleware/internal/rt"
	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// ringPub is the publishing side of the shm and intra transports.
type ringPub struct {
	n       *Node
	sr      *sharedRing
	w       *shm.Writer
	clock   ClockID
	timeout int64 // ns
	max     int
	flags   uint8
	// stages is PublisherOptions.Stages (nil: off); ps is reused so a
	// stamped message allocates nothing.
	stages func(*PublishStages)
	ps     PublishStages
}

func (n *Node) newRingPub(c Contract, o *PublisherOptions, intra bool) (*ringPub, error) {
	p, _, err := ringParams(c)
	if err != nil {
		return nil, err
	}
	timeout := time.Second
	if o != nil && o.SendTimeout > 0 {
		timeout = o.SendTimeout
	}
	sr, err := n.acquireRing(p, intra)
	if err != nil {
		return nil, err
	}
	var w *shm.Writer
	err = sr.r.Guard(func() (err error) {
		w, err = shm.NewWriter(sr.r, n.pid)
		return err
	})
	if err != nil {
		releaseRing(sr)
		return nil, mapErr(err)
	}
	if n.opts.ShmReserveAll {
		if err := w.ReserveAll(); err != nil {
			sr.r.Guard(func() error { w.Close(); return nil })
			releaseRing(sr)
			return nil, mapErr(err)
		}
	}
	topic, log := c.Topic, n.opts.Logger
	w.OnDrop = func(pid int) {
		log.Warn("middleware: dropped dead subscriber", "topic", topic, "pid", pid)
	}
	rp := &ringPub{n: n, sr: sr, w: w, clock: n.opts.StampClock, timeout: int64(timeout), max: p.MaxPayload}
	if o != nil {
		rp.stages = o.Stages
	}
	return rp, nil
}

// Every method that touches the mapping runs with debug.SetPanicOnFault,
// so a segment truncated under us is ErrCorrupt naming the file instead of
// a SIGBUS (internal/shm/fault.go). The writer stays failed afterwards.

func (t *ringPub) loan() (b []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, err = nil, mapErr(t.w.Fault(v))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return t.acquire()
}

func (t *ringPub) acquire() ([]byte, error) {
	var deadline int64
	if t.sr.r.P.Reliable {
		deadline = monoclock.Now() + t.timeout
	}
	b, err := t.w.Acquire(deadline, monoclock.Now)
	if err != nil {
		return nil, mapErr(err)
	}
	return b, nil
}

// publish commits a loaned slot. The header is stamped here, at the
// entry of Loan.Publish, before the commit and the wake: the interval
// SendMono..RecvMono covers commit, wake-up and delivery. (The Reliable
// wait of the loan path happened in Loan, before the caller filled the
// slot; it is the caller's time, not the message's.)
func (t *ringPub) publish(n int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = mapErr(t.w.Fault(v))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	mono, other := stampNow(t.clock)
	return t.commit(n, mono, other)
}

func (t *ringPub) commit(n int, mono, other int64) error {
	if n < 0 || n > t.max {
		t.w.Abort()
		return fmt.Errorf("%w: topic %q: %d bytes, contract max %d", ErrTooLarge, t.sr.r.P.Topic, n, t.max)
	}
	if t.stages != nil {
		t.ps.Seq, t.ps.Entry, t.ps.Commit = t.w.LoanSeq(), mono, monoclock.Now()
	}
	t.w.Commit(n, shm.Meta{SendMono: mono, SendClock: other, Clock: int32(t.clock), Flags: t.flags})
	if t.stages != nil {
		t.stages(&t.ps)
		t.ps = PublishStages{}
	}
	return nil
}

func (t *ringPub) discard() {
	t.sr.r.Guard(func() error {
		if t.w.Err() == nil {
			t.w.Abort()
		}
		return nil
	})
}

// send is the copy path. The header is stamped at its entry, before the
// Reliable back-pressure wait and before the copy, so SendMono..RecvMono
// covers everything a caller's "about to publish" marker would: waiting
// for the slowest subscriber, copying the payload, commit, wake-up and
// delivery. A send that fails (ErrTimeout, ErrTooLarge, ErrNoSpace,
// ErrCorrupt) publishes nothing, so its stamp is simply dropped.
func (t *ringPub) send(payload []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = mapErr(t.w.Fault(v))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	mono, other := stampNow(t.clock)
	if len(payload) > t.max {
		return fmt.Errorf("%w: topic %q: %d bytes, contract max %d", ErrTooLarge, t.sr.r.P.Topic, len(payload), t.max)
	}
	b, err := t.acquire()
	if err != nil {
		return err
	}
	if t.stages != nil {
		t.ps.CopyStart = monoclock.Now()
		copy(b, payload)
		t.ps.CopyEnd = monoclock.Now()
	} else {
		copy(b, payload)
	}
	return t.commit(len(payload), mono, other)
}

func (t *ringPub) stats(s *PublisherStats) {
	// Process memory only (shm counter): right even when the segment
	// was overwritten or truncated.
	ws := t.w.Stats()
	s.Published += ws.Published
	s.Blocked += time.Duration(ws.BlockedNs)
	s.Timeouts += ws.Timeouts
	s.DroppedSubs += ws.Dropped
}

func (t *ringPub) close() error {
	t.sr.r.Guard(func() error { t.w.Close(); return nil })
	return releaseRing(t.sr)
}

// ringSub is the receiving side of the shm and intra transports.
type ringSub struct {
	sr      *sharedRing
	rd      *shm.Reader
	wait    WaitStrategy
	spinFor int64
	// dedicated is SubscriberOptions.DedicatedWait.
	dedicated bool
	closing   func() bool
	inCB      *atomic.Int32
	f         shm.Frame
	msg       Message
	// sizeChecked is when next last fstat'ed the segment (monoclock.Now).
	sizeChecked int64
	// stages is SubscriberOptions.Stages (nil: off); rs is reused.
	stages func(*ReceiveStages)
	rs     ReceiveStages
}

// sleep is one futex sleep of at most sleepSlice; a dedicated wait
// (SubscriberOptions.DedicatedWait) keeps its P through it when one of
// the process's GOMAXPROCS−1 reservations is free.
func (t *ringSub) sleep() {
	if t.dedicated && rt.HoldP() {
		t.rd.SleepHeld(sleepSlice)
		rt.ReleaseP()
		return
	}
	t.rd.Sleep(sleepSlice)
}

// sleepSlice bounds one futex sleep so ctx cancellation and Close are
// noticed within it without a per-call allocation (context.AfterFunc).
const sleepSlice = 20 * time.Millisecond

func (n *Node) newRingSub(c Contract, o *SubscriberOptions, intra bool, closing func() bool, inCB *atomic.Int32) (*ringSub, error) {
	p, depth, err := ringParams(c)
	if err != nil {
		return nil, err
	}
	so := SubscriberOptions{Wait: WaitFutex, SpinFor: 50 * time.Microsecond}
	if o != nil {
		so = *o
		if so.SpinFor <= 0 {
			so.SpinFor = 50 * time.Microsecond
		}
	}
	if so.Wait > WaitHybrid {
		return nil, fmt.Errorf("%w: topic %q: wait strategy %d unknown", ErrContract, c.Topic, so.Wait)
	}
	sr, err := n.acquireRing(p, intra)
	if err != nil {
		return nil, err
	}
	var rd *shm.Reader
	err = sr.r.Guard(func() (err error) {
		rd, err = shm.NewReader(sr.r, n.pid, n.name, depth, uint32(so.Wait))
		return err
	})
	if err != nil {
		releaseRing(sr)
		return nil, mapErr(err)
	}
	return &ringSub{sr: sr, rd: rd, wait: so.Wait, spinFor: int64(so.SpinFor), dedicated: so.DedicatedWait, closing: closing, inCB: inCB, stages: so.Stages}, nil
}

// next runs with debug.SetPanicOnFault, fn included (it reads the
// mapped payload): a segment truncated under us makes next return
// ErrCorrupt naming the file instead of dying of SIGBUS. A fault in fn
// unwinds fn. Any other panic of fn goes on as it was.
func (t *ringSub) next(ctx context.Context, fn func(*Message)) (err error) {
	defer func() {
		if v := recover(); v != nil {
			t.inCB.Store(0)
			t.msg.Payload = nil
			err = mapErr(t.rd.Fault(v))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var spins int
	var spinStart, wake int64
	for {
		if t.stages != nil {
			wake = monoclock.Now() // each look: after a sleep or spin this is the wake-up
		}
		ok, err := t.rd.TryNext(&t.f)
		if err != nil {
			return mapErr(err)
		}
		if ok {
			m := &t.msg
			f := &t.f
			m.RecvMono = monoclock.Now()
			m.Header = Header{Version: f.Version, Flags: f.Flags, TopicID: f.TopicID, Epoch: f.Epoch,
				Seq: f.Seq, SendMono: f.SendMono, SendClock: f.SendClock, Clock: ClockID(f.Clock), Len: f.Len}
			m.Lost = f.Lost
			m.Payload = f.Payload
			if t.stages != nil {
				t.rs = ReceiveStages{Seq: f.Seq, Wake: wake, Callback: m.RecvMono}
				t.stages(&t.rs)
			}
			t.inCB.Store(1)
			fn(m)
			t.inCB.Store(0)
			m.Payload = nil
			// Release re-checks the slot: ErrCorrupt here means the
			// message fn just read may have been torn.
			return mapErr(t.rd.Release())
		}
		switch t.wait {
		case WaitSpin:
			spins++
			if spins&1023 != 0 {
				continue
			}
		case WaitHybrid:
			spins++
			if spinStart == 0 {
				spinStart = monoclock.Now()
			}
			if spins&63 != 0 {
				continue
			}
			if monoclock.Now()-spinStart < t.spinFor {
				if spins&1023 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					if t.closing() {
						return ErrClosed
					}
				}
				continue
			}
			t.sleep()
		default:
			t.sleep()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.closing() {
			return ErrClosed
		}
		// While idle, look for a file truncated under us now and then
		// (a failed publisher will not wake us).
		if now := monoclock.Now(); now-t.sizeChecked > int64(sleepSlice) {
			t.sizeChecked = now
			if err := t.rd.CheckSize(); err != nil {
				return mapErr(err)
			}
		}
	}
}

func (t *ringSub) stats(s *SubscriberStats) {
	rs := t.rd.Stats() // process memory only, as ringPub.stats
	s.Delivered += rs.Delivered
	s.Lost += rs.Lost
	s.Overruns += rs.Overruns
	s.TornRetries += rs.TornRetries
	s.Epochs += rs.Epochs
}

func (t *ringSub) close() error {
	t.sr.r.Guard(func() error { t.rd.Close(); return nil })
	return releaseRing(t.sr)
}

func (t *ringSub) interrupt() { t.rd.Interrupt() }
