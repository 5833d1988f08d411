package scopesim

import (
	"context"
	"io"
	"sync"

	"github.com/hilrig/hilrig/scopes"
)

// EdgeSource feeds one simulated scope channel with edges.
type EdgeSource interface {
	// ReadEdge blocks until the channel's next edge and returns its time in
	// nanoseconds on the source's clock (all channels of one simulator must
	// share a clock) and its polarity. It returns io.EOF when the source is
	// exhausted and ctx.Err() when ctx ends. Called from one goroutine.
	ReadEdge(ctx context.Context) (tNs int64, rising bool, err error)
}

// MemSource is an in-memory [EdgeSource] for tests: Push appends edges,
// ReadEdge hands them out in order. Safe for concurrent use.
type MemSource struct {
	mu     sync.Mutex
	edges  []scopes.Edge
	closed bool
	wake   chan struct{}
}

var _ EdgeSource = (*MemSource)(nil)

// NewMemSource returns an empty source.
func NewMemSource() *MemSource { return &MemSource{wake: make(chan struct{})} }

// Push appends edges (which must be in time order) and wakes the reader.
func (m *MemSource) Push(edges ...scopes.Edge) {
	m.mu.Lock()
	m.edges = append(m.edges, edges...)
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
}

// Close makes ReadEdge return io.EOF once the pushed edges are consumed.
func (m *MemSource) Close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.wake)
		m.wake = make(chan struct{})
	}
	m.mu.Unlock()
}

// ReadEdge implements [EdgeSource]; it blocks until an edge is pushed.
func (m *MemSource) ReadEdge(ctx context.Context) (int64, bool, error) {
	for {
		m.mu.Lock()
		if len(m.edges) > 0 {
			e := m.edges[0]
			m.edges = m.edges[1:]
			m.mu.Unlock()
			return e.TimeNs, e.Rising, nil
		}
		if m.closed {
			m.mu.Unlock()
			return 0, false, io.EOF
		}
		w := m.wake
		m.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
}

// Pulses returns the edges of n marker pulses on a sender and a receiver
// line: pulse i rises on the sender at start+i·period and on the receiver
// delay(i) later; each pulse is width long. Handy for feeding two
// MemSources with a known delay distribution.
func Pulses(n int, startNs, periodNs, widthNs int64, delay func(i int) int64) (sender, receiver []scopes.Edge) {
	for i := range n {
		t := startNs + int64(i)*periodNs
		d := delay(i)
		sender = append(sender, scopes.Edge{TimeNs: t, Rising: true}, scopes.Edge{TimeNs: t + widthNs, Rising: false})
		receiver = append(receiver, scopes.Edge{TimeNs: t + d, Rising: true}, scopes.Edge{TimeNs: t + d + widthNs, Rising: false})
	}
	return sender, receiver
}
