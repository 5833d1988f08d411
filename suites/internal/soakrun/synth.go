package soakrun

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/report"
)

// Synth is a synthetic stream for the controller-side tests and the
// memory benchmark: each Take of its subscriber side produces one agent
// window covering the time since the previous Take, with RateHz × elapsed
// latency samples (log-normal around MedianNs) recorded into a fresh
// window histogram, exactly as an agent does. Nothing is lost. The
// publisher side reports the same count as sent. Not safe for concurrent
// use (the runner goroutine only).
type Synth struct {
	RateHz   float64
	MedianNs float64
	rng      *rand.Rand
	last     time.Time
	idx      uint64
	pending  []agentproto.Window
}

// NewSynth returns a synthetic stream seeded with seed.
func NewSynth(rateHz, medianNs float64, seed uint64) *Synth {
	return &Synth{RateHz: rateHz, MedianNs: medianNs, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), last: time.Now()}
}

type synthSub struct{ s *Synth }
type synthPub struct{ s *Synth }

// Sub is the subscriber side.
func (s *Synth) Sub() Source { return synthSub{s} }

// Pub is the publisher side.
func (s *Synth) Pub() Source { return synthPub{s} }

func (p synthPub) Take() []agentproto.Window {
	out := p.s.pending
	p.s.pending = nil
	return out
}

func (u synthSub) Take() []agentproto.Window {
	s := u.s
	now := time.Now()
	n := uint64(math.Round(now.Sub(s.last).Seconds() * s.RateHz))
	h := report.NewHistogram()
	s.RecordInto(h, n)
	w := agentproto.Window{Index: s.idx, StartNs: s.last.UnixNano(), EndNs: now.UnixNano(), Received: n, Latency: h,
		RSSBytes: hostinfo.ProcessRSS()}
	s.pending = append(s.pending, agentproto.Window{Index: s.idx, StartNs: w.StartNs, EndNs: w.EndNs, Sent: n, RSSBytes: w.RSSBytes})
	s.idx++
	s.last = now
	return []agentproto.Window{w}
}

// RecordInto records n synthetic latency samples into h. It does not
// allocate.
func (s *Synth) RecordInto(h *report.Histogram, n uint64) {
	for range n {
		// log-normal, sigma 0.25: a realistic body with a modest tail
		v := s.MedianNs * math.Exp(0.25*s.rng.NormFloat64())
		h.Record(int64(v))
	}
}
