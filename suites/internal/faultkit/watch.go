//go:build unix

package faultkit

import (
	"context"
	"sync"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// EpochStats is what a Watcher saw of one publisher epoch (one publisher
// process lifetime).
type EpochStats struct {
	Epoch uint32
	// Delivered messages, Lost by sequence gap (as the middleware reports
	// it), Torn payloads (pattern broken), SeqErrors (sequence not
	// first-is-1 / +1 / +1+Lost).
	Delivered, Lost, Torn, SeqErrors uint64
	LastSeq                          uint64
	// First is when the epoch's first message was taken.
	First time.Time
}

// Watcher drains a subscriber in a goroutine, checking every payload's
// pattern and sequence per epoch and recording one-way latency
// (CLOCK_MONOTONIC, same host). Safe for concurrent use.
type Watcher struct {
	mu     sync.Mutex
	epochs []EpochStats
	hist   *report.Histogram
	done   chan struct{}
	err    error
}

// Watch starts draining sub until ctx ends or Receive fails.
func Watch(ctx context.Context, sub *middleware.Subscriber) *Watcher {
	w := &Watcher{hist: report.NewHistogram(), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			err := sub.Next(ctx, w.take)
			if err != nil {
				if ctx.Err() == nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
				}
				return
			}
		}
	}()
	return w
}

func (w *Watcher) take(m *middleware.Message) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.epochs)
	if n == 0 || w.epochs[n-1].Epoch != m.Header.Epoch {
		w.epochs = append(w.epochs, EpochStats{Epoch: m.Header.Epoch, First: now})
		n++
	}
	e := &w.epochs[n-1]
	switch {
	case e.Delivered == 0 && m.Header.Seq != 1+m.Lost:
		e.SeqErrors++
	case e.Delivered > 0 && m.Header.Seq != e.LastSeq+1+m.Lost:
		e.SeqErrors++
	}
	if tag, ok := Check(m.Payload); !ok || tag != m.Header.Seq {
		e.Torn++
	}
	e.Delivered++
	e.Lost += m.Lost
	e.LastSeq = m.Header.Seq
	if d := m.RecvMono - m.Header.SendMono; d >= 0 {
		w.hist.Record(d)
	}
}

// Epochs returns a copy of the per-epoch statistics so far.
func (w *Watcher) Epochs() []EpochStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]EpochStats(nil), w.epochs...)
}

// Delivered is the total over all epochs.
func (w *Watcher) Delivered() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n uint64
	for _, e := range w.epochs {
		n += e.Delivered
	}
	return n
}

// Histogram returns a copy of the latency histogram so far.
func (w *Watcher) Histogram() *report.Histogram {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := report.NewHistogram()
	h.Merge(w.hist)
	return h
}

// Err is the error that stopped the watcher (nil while running or after
// a cancel).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Done is closed when the watcher stopped.
func (w *Watcher) Done() <-chan struct{} { return w.done }
