package scopesim

import (
	"context"
	"time"
)

// PulseGen generates marker pulses in real time for a standalone simulator
// (hilrig scope sim): pulse i rises on the sender at start+i·Period and on
// the receiver Delay + jitter(i) later, where jitter is a deterministic
// pseudo-random value in [0, Jitter). Timestamps are nanoseconds since the
// generator's start on the monotonic clock.
type PulseGen struct {
	Period, Width, Delay, Jitter time.Duration
	start                        time.Time
}

// NewPulseGen returns a generator starting now. Zero Width defaults to
// Period/4.
func NewPulseGen(period, delay, jitter time.Duration) *PulseGen {
	return &PulseGen{Period: period, Width: period / 4, Delay: delay, Jitter: jitter, start: time.Now()}
}

// Sender returns the sender line's source.
func (g *PulseGen) Sender() EdgeSource { return &genSource{g: g} }

// Receiver returns the receiver line's source.
func (g *PulseGen) Receiver() EdgeSource { return &genSource{g: g, recv: true} }

func (g *PulseGen) jitter(i int64) time.Duration {
	if g.Jitter <= 0 {
		return 0
	}
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019 // splitmix64 step
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	x ^= x >> 31
	return time.Duration(x % uint64(g.Jitter))
}

type genSource struct {
	g    *PulseGen
	recv bool
	n    int64 // next edge index: pulse n/2, rising when even
}

// ReadEdge blocks until the next edge is due, then returns it.
func (s *genSource) ReadEdge(ctx context.Context) (int64, bool, error) {
	i, rising := s.n/2, s.n%2 == 0
	at := time.Duration(i) * s.g.Period
	if s.recv {
		at += s.g.Delay + s.g.jitter(i)
	}
	if !rising {
		at += s.g.Width
	}
	t := time.NewTimer(time.Until(s.g.start.Add(at)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	s.n++
	return int64(at), rising, nil
}
