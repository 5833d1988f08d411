package middleware

import (
	"context"
	"errors"
)

// placeholder implementation: replaced by the shared-memory core (issue 2).

var errNotImplemented = errors.New("middleware: not implemented yet")

// Node is a participant in a domain. It owns its publishers and subscribers.
// Safe for concurrent use.
type Node struct{}

// OpenNode opens a node named name (used in segment subscriber tables and
// tools). It does not block.
func OpenNode(name string, opts *NodeOptions) (*Node, error) { return nil, errNotImplemented }

// Close closes all publishers and subscribers of the node. Idempotent.
func (n *Node) Close() error { return errNotImplemented }

// NewPublisher creates a publisher for contract c.
func (n *Node) NewPublisher(c Contract, opts *PublisherOptions) (*Publisher, error) {
	return nil, errNotImplemented
}

// NewSubscriber creates a subscriber for contract c.
func (n *Node) NewSubscriber(c Contract, opts *SubscriberOptions) (*Subscriber, error) {
	return nil, errNotImplemented
}

// Publisher publishes on one topic. Send/Loan/Publish are not safe for
// concurrent use by several goroutines; Stats is.
type Publisher struct{}

// Send copies payload into the next slot and publishes it. 0 allocs. Blocks
// up to SendTimeout on a Reliable topic with a slow subscriber.
func (p *Publisher) Send(payload []byte) error { return errNotImplemented }

// Loan hands out the next slot for zero-copy filling. 0 allocs.
func (p *Publisher) Loan() (*Loan, error) { return nil, errNotImplemented }

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats { return PublisherStats{} }

// Close closes the publisher. Idempotent.
func (p *Publisher) Close() error { return errNotImplemented }

// Loan is a slot lent by Publisher.Loan. Exactly one of Publish or Discard
// must be called; the Loan must not be used afterwards.
type Loan struct{}

// Bytes is the slot's payload area, len == contract MaxPayload.
func (l *Loan) Bytes() []byte { return nil }

// Publish publishes the first n bytes of Bytes(). 0 allocs.
func (l *Loan) Publish(n int) error { return errNotImplemented }

// Discard returns the slot unpublished.
func (l *Loan) Discard() {}

// Subscriber receives one topic. Receive/Next must be called from one
// goroutine at a time; Stats is safe concurrently.
type Subscriber struct{}

// Receive calls fn for every message until ctx is done (returns ctx.Err())
// or fn returns an error (returned as is). Blocks.
func (s *Subscriber) Receive(ctx context.Context, fn func(*Message) error) error {
	return errNotImplemented
}

// Next waits for one message and calls fn with it. Blocks until a message
// or ctx is done.
func (s *Subscriber) Next(ctx context.Context, fn func(*Message)) error { return errNotImplemented }

// Stats returns the subscriber's counters.
func (s *Subscriber) Stats() SubscriberStats { return SubscriberStats{} }

// Close closes the subscriber and removes it from the segment's table. Idempotent.
func (s *Subscriber) Close() error { return errNotImplemented }

// CopyPayload appends the payload to dst[:0] and returns it, for callers that
// keep data beyond the callback.
func (m *Message) CopyPayload(dst []byte) []byte { return append(dst[:0], m.Payload...) }
