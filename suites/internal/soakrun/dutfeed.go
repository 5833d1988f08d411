package soakrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// FaultSource reports faults the runner does not detect itself: a dut
// program that crashed and was restarted by its supervisor (DUTFeed).
// The runner takes them when it closes a window, after the window's last
// Take of every track, and closes that window as a fault window
// (soak.Window.Fault). Called from the runner goroutine only.
type FaultSource interface {
	TakeFaults() []soak.Fault
}

// ForDUT is p's duration, windows and fault budget as the soak of dut d
// (the dut's reaction, no traffic mix, no churn): the loss bound is d's
// miss-rate bound over the planned stimuli (duration × rate; zero misses
// without one), the window max d's max bound (else unbounded: an answer
// past the deadline is a miss, never a sample), the drift and RSS trends
// as p's. Call after Shorten: the loss bound derives from the duration.
func (p *Plan) ForDUT(d *fixtures.DUT) *Plan {
	q := *p
	q.Flows, q.Churn, q.Notes = nil, 0, append([]string(nil), p.Notes...)
	planned := int64(p.Duration.Seconds() * d.Stimulus.RateHz)
	lost := int64(0)
	if r := d.Bounds.MaxMissRate; r != nil {
		lost = int64(math.Floor(*r * float64(planned)))
	}
	q.Bounds.MaxLost, q.Bounds.MaxLatency = &lost, d.Bounds.Max
	q.Notes = append(q.Notes, fmt.Sprintf("dut %s: %d misses allowed (max_miss_rate over the %d stimuli of %v at %g Hz); the reaction runs in rounds of %d stimuli",
		d.Name, lost, planned, p.Duration, d.Stimulus.RateHz, DUTRound(&q, d)))
	return &q
}

// DUTRound is the stimuli of one measurement round of a dut soak: half a
// checkpoint window of the dut's schedule (between 250 ms and 10 s), at
// least one. Between rounds the rig probes the program's readiness
// again (about two deadlines and two probe periods without timed
// stimuli), which is also how a restarted program is found answering.
func DUTRound(p *Plan, d *fixtures.DUT) int {
	span := min(max(p.Window/2, 250*time.Millisecond), 10*time.Second)
	return max(int(span.Seconds()*d.Stimulus.RateHz), 1)
}

// DUTFeed runs a dut program's reaction as a soak: back-to-back rounds of
// dut.Measure (DUTRound stimuli each) until the soak's end, each round
// one agent window of the dut's stream (its latency histogram, answers
// and misses, the program's CPU time and RSS), with the program
// supervised (dut.Program.Supervise): a crash is restarted, and its end,
// exit and output tail come back as a fault (FaultSource) with the round
// it fell in. It is the soak's Finisher. Safe for concurrent use.
type DUTFeed struct {
	// Agent is the soak agent of the dut's stream: "dut <name>".
	Agent string
	// Stream is the stream name: "<input> → <output>".
	Stream string

	p      *dut.Program
	sup    *dut.Supervisor
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	sub, pub []agentproto.Window
	// pending faults wait for the round they fell in to be taken;
	// released ones for the runner's TakeFaults.
	pending, released []soak.Fault
	seen              int
	idx               uint64
	err               error
}

// StartDUT starts the rounds of p's reaction (in pl's domain and chips)
// until until, the program supervised meanwhile, and returns the feed and
// its two tracks (the dut's stimuli and its responses, under agent "dut
// <name>"). A round that fails (the program no longer answers after a
// restart: dut.ErrNotReady) ends the rounds; stop, if set, is then
// called (the runner's Stop) and Finish returns the error. Does not
// block.
func StartDUT(ctx context.Context, p *dut.Program, pl dut.Placement, plan *Plan, until time.Time, stop func()) (*DUTFeed, []*Track) {
	d := p.DUT
	f := &DUTFeed{Agent: "dut " + d.Name, Stream: d.Correlation.Input + " → " + d.Correlation.Output, p: p, done: make(chan struct{})}
	ctx, f.cancel = context.WithCancel(ctx)
	f.sup = p.Supervise(ctx)
	round := DUTRound(plan, d)
	go func() {
		defer close(f.done)
		for time.Now().Before(until) && ctx.Err() == nil {
			if err := f.measure(ctx, pl, round); err != nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				if stop != nil {
					stop()
				}
				return
			}
		}
	}()
	m := &report.Method{Kind: report.OneWay, Clocks: dut.Clocks}
	return f, []*Track{
		{Agent: f.Agent, Flow: f.Stream, Role: agentproto.Subscriber, Src: dutSource{f, false}, Method: m},
		{Agent: f.Agent, Flow: f.Stream, Role: agentproto.Publisher, Src: dutSource{f, true}},
	}
}

// measure runs one round and queues its windows and the crashes that
// ended before it did.
func (f *DUTFeed) measure(ctx context.Context, pl dut.Placement, n int) error {
	opts := dut.MeasureOptions{Count: n}
	if !f.p.DUT.External {
		opts.Usage = f.p.Usage
	}
	start := time.Now()
	m, err := dut.Measure(ctx, f.p.DUT, pl, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped: not a failure of the program
		}
		return fmt.Errorf("%w: dut %s: %w\ndut output:\n%s", ErrFeed, f.p.DUT.Name, err, f.p.OutputTail(20))
	}
	end := time.Now()
	t := m.Tally
	h := report.NewHistogram()
	for _, s := range t.Samples {
		h.Record(s)
	}
	// The program's CPU time over the timed phase; a restart inside the
	// round makes the difference of two processes' times meaningless.
	cpu := int64(max(m.CPUPercent, 0) / 100 * float64(m.End-m.Start))
	crashes := f.sup.Crashes()
	f.mu.Lock()
	defer f.mu.Unlock()
	w := agentproto.Window{Endpoint: f.Agent, Index: f.idx, StartNs: start.UnixNano(), EndNs: end.UnixNano()}
	f.idx++
	f.pub = append(f.pub, agentproto.Window{Endpoint: w.Endpoint, Index: w.Index, StartNs: w.StartNs, EndNs: w.EndNs, Sent: uint64(t.Stimuli)})
	w.Received, w.Lost, w.Latency, w.RSSBytes, w.CPUUserNs = uint64(t.Answered), uint64(t.Missed), h, m.RSSBytes, cpu
	f.sub = append(f.sub, w)
	for _, c := range crashes[f.seen:] {
		f.pending = append(f.pending, f.fault(c, len(crashes)))
	}
	f.seen = len(crashes)
	return nil
}

// fault is crash c (the n-th restart) as a soak fault, its
// CLOCK_MONOTONIC stamps as wall time.
func (f *DUTFeed) fault(c dut.Crash, n int) soak.Fault {
	now, mono := time.Now(), monoclock.Now()
	wall := func(m int64) time.Time { return now.Add(-time.Duration(mono - m)) }
	rec := fmt.Sprintf("restarted by its supervisor in %v (restart %d)", time.Duration(c.RestartedMono-c.DiedMono).Round(time.Microsecond), n)
	if c.RestartErr != "" {
		rec = "restart failed: " + c.RestartErr
	}
	return soak.Fault{Board: f.p.DUT.Board, Cause: fmt.Sprintf("dut %s ended (%s)", f.p.DUT.Name, c.Exit),
		From: wall(c.DiedMono), To: wall(c.RestartedMono), Recovery: rec, Console: c.Output}
}

// TakeFaults returns the crashes whose round the runner has taken.
func (f *DUTFeed) TakeFaults() []soak.Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.released
	f.released = nil
	return out
}

// Restarts is how many times the program was restarted so far.
func (f *DUTFeed) Restarts() int { return f.p.Restarts() }

// Finish waits for the round under way (the rounds end at the soak's
// end), stops the supervision and returns the rounds not yet taken and
// the error that ended the rounds, if any. Bounded by ctx and 30 s (then
// the round is cancelled). The program keeps running: the caller stops it.
func (f *DUTFeed) Finish(ctx context.Context) (map[*Track][]agentproto.Window, error) {
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	var err error
	select {
	case <-f.done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = fmt.Errorf("%w: dut %s: the last round did not end within 30s", ErrFeed, f.p.DUT.Name)
	}
	f.Close()
	crashes := f.sup.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	// Crashes after the last round: no round to go with, still faults.
	for _, c := range crashes[min(f.seen, len(crashes)):] {
		f.released = append(f.released, f.fault(c, len(crashes)))
	}
	f.seen = len(crashes)
	return nil, errors.Join(err, f.err)
}

// Close cancels the rounds and the supervision and waits for them.
// Idempotent.
func (f *DUTFeed) Close() {
	f.cancel()
	<-f.done
	f.sup.Stop()
}

// dutSource is one side of the feed as a runner Source.
type dutSource struct {
	f   *DUTFeed
	pub bool
}

func (s dutSource) Take() []agentproto.Window {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.pub {
		out := f.pub
		f.pub = nil
		return out
	}
	out := f.sub
	f.sub = nil
	// The faults of the rounds taken go with them.
	f.released = append(f.released, f.pending...)
	f.pending = nil
	return out
}

var (
	_ Finisher    = (*DUTFeed)(nil)
	_ FaultSource = (*DUTFeed)(nil)
)
