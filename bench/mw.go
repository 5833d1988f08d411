package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// helloBit marks handshake messages; timed sequence numbers never set it.
const helloBit = uint64(1) << 63

// mwEnd is one end of a middleware ping-pong: it publishes on one topic and
// subscribes to the other. The first 8 payload bytes carry the sequence
// number (little endian); a receiver drops replies with another number, so
// late handshake replies never pair with a timed request.
type mwEnd struct {
	node    *middleware.Node
	ownNode bool // close the node with the end
	pub     *middleware.Publisher
	sub     *middleware.Subscriber
	loan    bool
	size    int
	buf     []byte // copy-path payload, size bytes

	ctx  context.Context
	want uint64
	got  bool
	fn   func(*middleware.Message)
}

// mwOptions are the contract knobs shared by both ends.
type mwOptions struct {
	transport middleware.Transport
	wait      middleware.WaitStrategy
	reliable  bool
	loan      bool
	size      int
	depth     int  // contract history depth; 0: 1 (ring of 3 slots on shm)
	keepLast  bool // udp reliable: depth is a keep-last history, not a send window
	dedicated bool // the subscriber's consumer waits holding its P (UDPConfig.DedicatedReader; shm/intra SubscriberOptions.DedicatedWait)
}

func (o mwOptions) contract(topic string, udp middleware.UDPConfig) middleware.Contract {
	udp.KeepLast, udp.DedicatedReader = o.keepLast, o.dedicated
	c := middleware.Contract{Topic: topic, MaxPayload: o.size, Transport: o.transport, UDP: udp, Depth: max(o.depth, 1)}
	if o.reliable {
		c.Reliability = middleware.Reliable
	}
	return c
}

// mwErr wraps a middleware error with what the bench was doing; a
// transport this platform cannot run (errors.ErrUnsupported, e.g. shm off
// Linux) also matches ErrUnavailable, so callers can tell it from a failure.
func mwErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func newMWEnd(node *middleware.Node, o mwOptions) *mwEnd {
	e := &mwEnd{node: node, loan: o.loan, size: o.size, buf: make([]byte, o.size)}
	e.fn = func(m *middleware.Message) {
		if len(m.Payload) < 8 {
			return
		}
		s := binary.LittleEndian.Uint64(m.Payload)
		if s == e.want || (e.want == helloBit && s&helloBit != 0) {
			e.got = true
		}
	}
	return e
}

func (e *mwEnd) subscribe(c middleware.Contract, o mwOptions) error {
	s, err := e.node.NewSubscriber(c, &middleware.SubscriberOptions{Wait: o.wait, DedicatedWait: o.dedicated})
	if err != nil {
		return mwErr("subscribe "+c.Topic, err)
	}
	e.sub = s
	return nil
}

func (e *mwEnd) publish(c middleware.Contract) error {
	p, err := e.node.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: time.Second})
	if err != nil {
		return mwErr("publish "+c.Topic, err)
	}
	e.pub = p
	return nil
}

// send publishes size bytes tagged seq: the copy path copies the whole
// payload buffer; the loan path writes only the tag into the slot (a real
// producer fills the slot in place, so that cost is the producer's).
// 0 allocs.
func (e *mwEnd) send(seq uint64, n int) error {
	if e.loan {
		l, err := e.pub.Loan()
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(l.Bytes(), seq)
		return l.Publish(n)
	}
	binary.LittleEndian.PutUint64(e.buf, seq)
	return e.pub.Send(e.buf[:n])
}

// handshake sends hellos until one is answered: a best-effort publisher may
// drop what it sends before the peer's subscriber is attached.
func (e *mwEnd) handshake(ctx context.Context) error {
	var last error
	for i := uint64(1); i <= 100; i++ {
		if err := e.send(helloBit|i, e.size); err != nil {
			last = err
		}
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		e.want, e.got = helloBit, false
		for !e.got {
			if err := e.sub.Next(c, e.fn); err != nil {
				break
			}
		}
		cancel()
		if e.got {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w: no reply to 100 handshake messages in 10 s (last send error: %v)", ErrPeer, last)
}

func (e *mwEnd) roundTrip(seq uint64) error {
	if err := e.send(seq, e.size); err != nil {
		return err
	}
	e.want, e.got = seq, false
	for !e.got {
		if err := e.sub.Next(e.ctx, e.fn); err != nil {
			if e.ctx.Err() != nil {
				return ErrStalled
			}
			return err
		}
	}
	return nil
}

func (e *mwEnd) close() error {
	var errs []error
	if e.pub != nil {
		errs = append(errs, e.pub.Close())
	}
	if e.sub != nil {
		errs = append(errs, e.sub.Close())
	}
	if e.ownNode {
		errs = append(errs, e.node.Close())
	}
	return errors.Join(errs...)
}

// mwPong echoes every message: copy path Send(view) (slot to slot), loan
// path a fresh loan with the tag only.
type mwPong struct {
	e     *mwEnd
	n     uint64
	reply func(*middleware.Message) error
}

func newMWPong(e *mwEnd) *mwPong {
	p := &mwPong{e: e}
	p.reply = func(m *middleware.Message) error {
		p.n++
		if e.loan {
			if len(m.Payload) < 8 {
				return nil
			}
			l, err := e.pub.Loan()
			if err != nil {
				return err
			}
			copy(l.Bytes()[:8], m.Payload[:8])
			return l.Publish(len(m.Payload))
		}
		return e.pub.Send(m.Payload)
	}
	return p
}

func (p *mwPong) serve(ctx context.Context, _ *atomic.Bool) (uint64, error) {
	err := p.e.sub.Receive(ctx, p.reply)
	if ctx.Err() != nil {
		return p.n, nil
	}
	return p.n, err
}

func (p *mwPong) close() error { return p.e.close() }
