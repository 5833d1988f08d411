package middleware

import (
	"fmt"
	"sync/atomic"
)

// Publisher publishes on one topic. Send/Loan/Publish are not safe for
// concurrent use by several goroutines; Stats and Close are.
type Publisher struct {
	n     *Node
	c     Contract
	t     pubTransport
	lc    lifecycle
	loan  Loan
	final PublisherStats // stats at teardown, served after Close
	done  chan struct{}
	// loaned mirrors loan.active for Close in another goroutine.
	loaned atomic.Bool
}

// NewPublisher creates a publisher for contract c. On shared memory a
// topic has one publisher at a time (a second one, live, gets ErrBusy); a
// publisher replacing a dead one starts a new epoch. Does not block
// (beyond opening the segment).
func (n *Node) NewPublisher(c Contract, opts *PublisherOptions) (*Publisher, error) {
	var (
		t   pubTransport
		err error
	)
	switch {
	case usesUDP(c):
		t, err = newUDPPublisher(n, c, opts)
	case c.Transport == TransportIntra:
		t, err = n.newRingPub(c, opts, true)
	case c.Transport == TransportAuto || c.Transport == TransportShm:
		t, err = n.newRingPub(c, opts, false)
	default:
		err = fmt.Errorf("%w: topic %q: transport %d unknown", ErrContract, c.Topic, c.Transport)
	}
	if err != nil {
		return nil, fmt.Errorf("node %q: publisher: %w", n.name, err)
	}
	p := &Publisher{n: n, c: c, t: t, done: make(chan struct{})}
	p.loan.p = p
	p.lc.init()
	if err := n.add(p, nil); err != nil {
		t.close()
		return nil, err
	}
	return p, nil
}

// Contract is the publisher's contract.
func (p *Publisher) Contract() Contract { return p.c }

// Send copies payload into the next slot and publishes it. 0 allocs.
// Blocks up to SendTimeout on a Reliable topic with a slow subscriber
// (then ErrTimeout); never blocks on BestEffort. A shared-memory segment
// overwritten or truncated by another process gives ErrCorrupt naming the
// file, and every later call the same error.
func (p *Publisher) Send(payload []byte) error {
	if !p.lc.enter() {
		return ErrClosed
	}
	if p.loan.active {
		p.exit()
		return ErrLoanOutstanding
	}
	err := p.t.send(payload)
	p.exit()
	return err
}

func (p *Publisher) exit() {
	if p.lc.leave() {
		p.teardown()
	}
}

// Loan hands out the next slot for zero-copy filling: fill Bytes(), then
// Publish(n) or Discard(). 0 allocs (the *Loan is reused; do not keep it).
// On a Reliable topic it blocks like Send. While a loan is outstanding
// Send and Loan return ErrLoanOutstanding and Close waits for it.
func (p *Publisher) Loan() (*Loan, error) {
	if !p.lc.enter() {
		return nil, ErrClosed
	}
	if p.loan.active {
		p.exit()
		return nil, ErrLoanOutstanding
	}
	b, err := p.t.loan()
	if err != nil {
		p.exit()
		return nil, err
	}
	p.loan.buf, p.loan.active = b, true
	p.loaned.Store(true)
	return &p.loan, nil // the reference is held until Publish/Discard
}

// Stats returns the publisher's counters. Safe concurrently.
func (p *Publisher) Stats() PublisherStats {
	if !p.lc.enter() {
		<-p.done
		return p.final
	}
	var s PublisherStats
	p.t.stats(&s)
	p.exit()
	return s
}

// Close closes the publisher. It waits for a Send running in another
// goroutine (bounded by SendTimeout); with a loan outstanding it returns
// at once and the teardown happens at the loan's Publish/Discard.
// Idempotent.
func (p *Publisher) Close() error { return p.close(true) }

func (p *Publisher) close(fromUser bool) error {
	first, last := p.lc.close()
	if !first {
		return nil
	}
	if fromUser {
		p.n.remove(p, nil)
	}
	if last {
		return p.teardown()
	}
	if !p.loaned.Load() {
		<-p.done // a Send in another goroutine is finishing
	}
	return nil
}

func (p *Publisher) teardown() error {
	p.t.stats(&p.final)
	err := p.t.close()
	close(p.done)
	return err
}

// Loan is a slot lent by Publisher.Loan. Exactly one of Publish or Discard
// must be called; the Loan must not be used afterwards.
type Loan struct {
	p      *Publisher
	buf    []byte
	active bool
}

// Bytes is the slot's payload area, len == contract MaxPayload (shared
// memory: writes go straight into the segment). The caller's writes are
// not protected against the segment file being truncated by another
// process meanwhile (they would fault with SIGBUS); Send is (ErrCorrupt).
func (l *Loan) Bytes() []byte { return l.buf }

// Publish publishes the first n bytes of Bytes(). 0 allocs. A bad n
// (negative or > MaxPayload) returns ErrTooLarge and discards the slot.
func (l *Loan) Publish(n int) error {
	if !l.active {
		return fmt.Errorf("%w: loan already published or discarded", ErrClosed)
	}
	l.active, l.buf = false, nil
	l.p.loaned.Store(false)
	err := l.p.t.publish(n)
	l.p.exit()
	return err
}

// Discard returns the slot unpublished.
func (l *Loan) Discard() {
	if !l.active {
		return
	}
	l.active, l.buf = false, nil
	l.p.loaned.Store(false)
	l.p.t.discard()
	l.p.exit()
}
