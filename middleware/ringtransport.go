package middleware

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
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
	w, err := shm.NewWriter(sr.r, n.pid, n.start)
	if err != nil {
		releaseRing(sr)
		return nil, mapErr(err)
	}
	if n.opts.ShmReserveAll {
		if err := w.ReserveAll(); err != nil {
			w.Close()
			releaseRing(sr)
			return nil, mapErr(err)
		}
	}
	topic, log := c.Topic, n.opts.Logger
	w.OnDrop = func(pid int) {
		log.Warn("middleware: dropped dead subscriber", "topic", topic, "pid", pid)
	}
	return &ringPub{n: n, sr: sr, w: w, clock: n.opts.StampClock, timeout: int64(timeout), max: p.MaxPayload}, nil
}

func (t *ringPub) loan() ([]byte, error) {
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
func (t *ringPub) publish(n int) error {
	mono, other := stampNow(t.clock)
	return t.commit(n, mono, other)
}

func (t *ringPub) commit(n int, mono, other int64) error {
	if n < 0 || n > t.max {
		t.w.Abort()
		return fmt.Errorf("%w: topic %q: %d bytes, contract max %d", ErrTooLarge, t.sr.r.P.Topic, n, t.max)
	}
	t.w.Commit(n, shm.Meta{SendMono: mono, SendClock: other, Clock: int32(t.clock), Flags: t.flags})
	return nil
}

func (t *ringPub) discard() { t.w.Abort() }

// send is the copy path. The header is stamped at its entry, before the
// Reliable back-pressure wait and before the copy, so SendMono..RecvMono
// covers everything a caller's "about to publish" marker would: waiting
// for the slowest subscriber, copying the payload, commit, wake-up and
// delivery. A send that fails (ErrTimeout, ErrTooLarge, ErrNoSpace)
// publishes nothing, so its stamp is simply dropped.
func (t *ringPub) send(payload []byte) error {
	mono, other := stampNow(t.clock)
	if len(payload) > t.max {
		return fmt.Errorf("%w: topic %q: %d bytes, contract max %d", ErrTooLarge, t.sr.r.P.Topic, len(payload), t.max)
	}
	b, err := t.loan()
	if err != nil {
		return err
	}
	copy(b, payload)
	return t.commit(len(payload), mono, other)
}

func (t *ringPub) stats(s *PublisherStats) {
	ws := t.w.Stats()
	s.Published += ws.Published
	s.Blocked += time.Duration(ws.BlockedNs)
	s.Timeouts += ws.Timeouts
	s.DroppedSubs += ws.Dropped
}

func (t *ringPub) close() error {
	t.w.Close()
	return releaseRing(t.sr)
}

// ringSub is the receiving side of the shm and intra transports.
type ringSub struct {
	sr      *sharedRing
	rd      *shm.Reader
	wait    WaitStrategy
	spinFor int64
	closing func() bool
	inCB    *atomic.Int32
	f       shm.Frame
	msg     Message
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
	rd, err := shm.NewReader(sr.r, n.pid, n.start, n.name, depth, uint32(so.Wait))
	if err != nil {
		releaseRing(sr)
		return nil, mapErr(err)
	}
	return &ringSub{sr: sr, rd: rd, wait: so.Wait, spinFor: int64(so.SpinFor), closing: closing, inCB: inCB}, nil
}

func (t *ringSub) next(ctx context.Context, fn func(*Message)) error {
	var spins int
	var spinStart int64
	for {
		if t.rd.TryNext(&t.f) {
			m := &t.msg
			f := &t.f
			m.RecvMono = monoclock.Now()
			m.Header = Header{Version: f.Version, Flags: f.Flags, TopicID: f.TopicID, Epoch: f.Epoch,
				Seq: f.Seq, SendMono: f.SendMono, SendClock: f.SendClock, Clock: ClockID(f.Clock), Len: f.Len}
			m.Lost = f.Lost
			m.Payload = f.Payload
			t.inCB.Store(1)
			fn(m)
			t.inCB.Store(0)
			m.Payload = nil
			t.rd.Release()
			return nil
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
			t.rd.Sleep(sleepSlice)
		default:
			t.rd.Sleep(sleepSlice)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.closing() {
			return ErrClosed
		}
	}
}

func (t *ringSub) stats(s *SubscriberStats) {
	rs := t.rd.Stats()
	s.Delivered += rs.Delivered
	s.Lost += rs.Lost
	s.Overruns += rs.Overruns
	s.TornRetries += rs.TornRetries
	s.Epochs += rs.Epochs
}

func (t *ringSub) close() error {
	t.rd.Close()
	return releaseRing(t.sr)
}

func (t *ringSub) interrupt() { t.rd.Interrupt() }
