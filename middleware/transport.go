package middleware

import "context"

// pubTransport is one transport's publishing side. Publisher owns one and
// forwards to it; the transport stamps the header (sequence, epoch, clocks)
// because sequence and epoch live with the transport's state (the shm
// segment, the UDP history).
//
// Implementations: shm and intra (the shared-memory core), udp (udp.go).
// Not safe for concurrent use; Publisher serialises calls. stats is safe
// concurrently.
type pubTransport interface {
	// loan returns the payload area of the next slot (len == MaxPayload).
	// 0 allocs.
	loan() ([]byte, error)
	// publish publishes the first n bytes of the loaned area. 0 allocs.
	publish(n int) error
	// discard gives the loaned area back unpublished.
	discard()
	// send copies payload and publishes it (the copy path). 0 allocs.
	send(payload []byte) error
	// stats adds the transport's counters into s.
	stats(s *PublisherStats)
	close() error
}

// subTransport is one transport's receiving side. next blocks until one
// message is available (or ctx is done) and calls fn with a view valid
// only during fn. 0 allocs per message.
type subTransport interface {
	next(ctx context.Context, fn func(*Message)) error
	stats(s *SubscriberStats)
	close() error
}
