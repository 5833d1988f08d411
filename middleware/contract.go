package middleware

import (
	"fmt"
	"hash/fnv"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

const (
	maxTopicLen  = 64
	maxDomainLen = 32
	// maxShmPayload bounds a slot (the pool holds Slots+17 of them; only
	// the Slots+2 of the working set are reserved up front, see
	// internal/shm/reserve.go).
	maxShmPayload = 1 << 30
)

func validTopic(t string) error {
	if len(t) == 0 || len(t) > maxTopicLen {
		return fmt.Errorf("%w: topic %q: length %d, want 1..%d", ErrContract, t, len(t), maxTopicLen)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-') {
			return fmt.Errorf("%w: topic %q: byte %d (%q) not in [A-Za-z0-9._/-]", ErrContract, t, i, c)
		}
	}
	return nil
}

func validDomain(d string) error {
	if len(d) == 0 || len(d) > maxDomainLen {
		return fmt.Errorf("%w: domain %q: length %d, want 1..%d", ErrContract, d, len(d), maxDomainLen)
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: domain %q: byte %d (%q) not in [A-Za-z0-9_-]", ErrContract, d, i, c)
		}
	}
	return nil
}

// TopicID is the id carried in Header.TopicID: FNV-1a 32 of the topic name.
func TopicID(topic string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return h.Sum32()
}

// ringParams validates c for the shm/intra transports and fills defaults.
func ringParams(c Contract) (shm.Params, int, error) {
	if err := validTopic(c.Topic); err != nil {
		return shm.Params{}, 0, err
	}
	if c.MaxPayload <= 0 || c.MaxPayload > maxShmPayload {
		return shm.Params{}, 0, fmt.Errorf("%w: topic %q: max payload %d bytes, want 1..%d", ErrContract, c.Topic, c.MaxPayload, maxShmPayload)
	}
	depth := c.Depth
	if depth == 0 {
		depth = 1
	}
	slots := c.Slots
	if slots == 0 {
		slots = depth + 2
	}
	if depth < 0 || slots < 1 || depth > slots {
		return shm.Params{}, 0, fmt.Errorf("%w: topic %q: depth %d and slots %d: want 1 <= depth <= slots", ErrContract, c.Topic, depth, slots)
	}
	if slots+shm.MaxSubscribers+1 > shm.MaxPool {
		return shm.Params{}, 0, fmt.Errorf("%w: topic %q: %d slots, at most %d", ErrContract, c.Topic, slots, shm.MaxPool-shm.MaxSubscribers-1)
	}
	if c.Reliability > Reliable {
		return shm.Params{}, 0, fmt.Errorf("%w: topic %q: reliability %d unknown", ErrContract, c.Topic, c.Reliability)
	}
	return shm.Params{
		Topic:      c.Topic,
		TopicID:    TopicID(c.Topic),
		MaxPayload: c.MaxPayload,
		RingLen:    slots,
		Reliable:   c.Reliability == Reliable,
	}, depth, nil
}

func usesUDP(c Contract) bool {
	return c.Transport == TransportUDP ||
		c.Transport == TransportAuto && (len(c.UDP.Peers) > 0 || c.UDP.Group != "" || c.UDP.Listen != "")
}
