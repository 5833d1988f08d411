package rig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/timesync"
)

// PTPProbeOptions tunes [Agent.StartPTPProbe].
type PTPProbeOptions struct {
	// Period is the agent's poll period ([agentproto.MinPTPPeriod] ..
	// [agentproto.MaxPTPPeriod]; 0 → timesync.DefaultPeriod). Poll the
	// probe with a Monitor at a slightly shorter period: Status waits for
	// the next sample, so the Monitor then follows the agent's pace and
	// sees every sample.
	Period time.Duration
	// RequestTimeout bounds each management request on the board
	// (0 → the timesync default, 500 ms).
	RequestTimeout time.Duration
	// Stale: Status fails when no sample arrived for this long
	// (0 → 3 periods + 2 s).
	Stale time.Duration
	// Buffer bounds the samples queued and not yet read by Status
	// (0 → 1024); past it the oldest are dropped and counted.
	Buffer int
}

var probeSeq atomic.Uint32

// PTPProbe is a timesync.Source fed by a probe the board's agent runs on
// the board's own ptp4l socket: the way to watch the PTP lock of a board
// whose management socket the controller cannot reach (SSH boards). The
// agent polls at a period; Status hands the samples out in order, one per
// call, each stamped (ReadAt) on the board's CLOCK_REALTIME. Safe for
// concurrent use.
type PTPProbe struct {
	agent *Agent
	id    string
	sock  string
	stale time.Duration
	buf   int

	notify chan struct{} // capacity 1: a sample or the end arrived

	mu        sync.Mutex
	queue     []agentproto.PTPSample
	dropped   uint64
	lost      uint64 // sequence gaps
	lastSeq   uint64
	lastAt    time.Time // board time of the last sample received
	lastRecv  time.Time // controller time (monotonic) it arrived
	end       string    // set by the end sample
	closed    bool
	endedCh   chan struct{}
	endedOnce sync.Once
}

var _ timesync.Source = (*PTPProbe)(nil)

// StartPTPProbe asks the agent to poll the ptp4l management socket at
// socket (a path on the board: the rack's clock.ptp4l_socket) and waits
// for its first sample (bounded by ctx and the staleness timeout). It
// fails — naming the board and the socket — when that first poll failed
// (socket missing, nobody listening, permission, timeout): the gate must
// not start on a board whose ptp4l cannot be read. The caller must Close
// the probe. Blocks for one poll.
func (a *Agent) StartPTPProbe(ctx context.Context, socket string, opts *PTPProbeOptions) (*PTPProbe, error) {
	var o PTPProbeOptions
	if opts != nil {
		o = *opts
	}
	if o.Period == 0 {
		o.Period = timesync.DefaultPeriod
	}
	if o.Stale <= 0 {
		o.Stale = 3*o.Period + 2*time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
	req := agentproto.PTPProbe{Probe: fmt.Sprintf("ptp%d", probeSeq.Add(1)), Socket: socket,
		PeriodNs: int64(o.Period), RequestTimeoutNs: int64(o.RequestTimeout)}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: board %s: %w", ErrAgent, a.Board.Name, err)
	}
	p := &PTPProbe{agent: a, id: req.Probe, sock: socket, stale: o.Stale, buf: o.Buffer,
		notify: make(chan struct{}, 1), endedCh: make(chan struct{})}
	a.mu.Lock()
	if a.dead != nil || a.stopped {
		err := a.dead
		a.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("%w: agent on %s stopped", ErrClosed, a.Board.Name)
		}
		return nil, err
	}
	if a.probes == nil {
		a.probes = map[string]*PTPProbe{}
	}
	a.probes[p.id] = p
	a.mu.Unlock()
	if err := a.enc.Encode(agentproto.NewPTPProbe(req)); err != nil {
		p.forget()
		return nil, fmt.Errorf("%w: board %s: start PTP probe: %w", ErrAgent, a.Board.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, o.Stale)
	defer cancel()
	first, err := p.next(wctx, false)
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("%w: board %s: PTP probe of ptp4l socket %s: no first sample: %w", ErrAgent, a.Board.Name, socket, err)
	}
	if first.Err != "" {
		_ = p.Close()
		return nil, fmt.Errorf("%w: %s", ErrPTPProbe, first.Err)
	}
	return p, nil
}

// ptpSample routes a sample to its probe. Called by the read loop with
// a.mu held.
func (a *Agent) ptpSample(s *agentproto.PTPSample) {
	if p := a.probes[s.Probe]; p != nil {
		p.add(*s)
		if s.End != "" {
			delete(a.probes, s.Probe)
		}
	}
}

func (p *PTPProbe) add(s agentproto.PTPSample) {
	p.mu.Lock()
	if p.lastSeq != 0 && s.Seq > p.lastSeq+1 {
		p.lost += s.Seq - p.lastSeq - 1
	}
	p.lastSeq = max(p.lastSeq, s.Seq)
	if s.End != "" {
		p.end = s.End
		p.endedOnce.Do(func() { close(p.endedCh) })
	} else {
		p.lastAt, p.lastRecv = time.Unix(0, s.AtNs), time.Now()
		if len(p.queue) >= p.buf {
			p.queue[0] = agentproto.PTPSample{}
			p.queue = p.queue[1:]
			p.dropped++
		}
		p.queue = append(p.queue, s)
	}
	p.mu.Unlock()
	p.signal()
}

// next returns the oldest queued sample (removing it when pop), waiting
// until one is queued, the probe ended or the agent's output ended.
// Safe for concurrent callers: the check and the pop are one critical
// section, and a caller that leaves samples behind wakes the next waiter.
func (p *PTPProbe) next(ctx context.Context, pop bool) (agentproto.PTPSample, error) {
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			s := p.queue[0]
			if pop {
				p.queue[0] = agentproto.PTPSample{}
				p.queue = p.queue[1:]
			}
			more := len(p.queue) > 0
			p.mu.Unlock()
			if more {
				p.signal()
			}
			return s, nil
		}
		end := p.end
		p.mu.Unlock()
		if end != "" {
			p.signal() // other waiters see the end too
			return agentproto.PTPSample{}, fmt.Errorf("%w: the agent ended the probe (%s)", ErrPTPProbe, end)
		}
		select {
		case <-p.notify:
		case <-p.agent.readEnd:
			if err := p.agent.Dead(); err != nil {
				return agentproto.PTPSample{}, err
			}
			return agentproto.PTPSample{}, fmt.Errorf("%w: board %s: agent output ended", ErrAgent, p.agent.Board.Name)
		case <-ctx.Done():
			return agentproto.PTPSample{}, ctx.Err()
		}
	}
}

func (p *PTPProbe) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Status returns the oldest sample not yet returned, waiting for the
// next one when none is queued. A failed poll on the board comes back as
// its error (naming board and socket) with ReadAt on the board's clock.
// When no sample arrives within the staleness timeout, or the agent or
// probe ended, it fails with ErrPTPProbe (or ErrAgent); ReadAt is then the
// board's time extrapolated from the last sample on the controller's
// monotonic clock, so the Monitor's series stays ordered on one clock.
// Blocks up to the staleness timeout; ctx cancels it.
func (p *PTPProbe) Status(ctx context.Context) (timesync.Status, error) {
	if err := ctx.Err(); err != nil {
		return timesync.Status{ReadAt: time.Now()}, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return timesync.Status{ReadAt: time.Now()}, fmt.Errorf("%w: board %s: PTP probe of %s", timesync.ErrClosed, p.agent.Board.Name, p.sock)
	}
	wctx, cancel := context.WithTimeout(ctx, p.stale)
	defer cancel()
	s, err := p.next(wctx, true)
	if err == nil {
		st := s.Status()
		if s.Err != "" {
			return timesync.Status{ReadAt: st.ReadAt}, fmt.Errorf("%w: %s", ErrPTPProbe, s.Err)
		}
		return st, nil
	}
	p.mu.Lock()
	at := time.Now()
	if !p.lastAt.IsZero() {
		at = p.lastAt.Add(time.Since(p.lastRecv))
	}
	p.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: board %s: no sample from the agent's probe of ptp4l socket %s for %s", ErrPTPProbe, p.agent.Board.Name, p.sock, p.stale)
	} else if ctx.Err() == nil {
		err = fmt.Errorf("board %s: ptp4l socket %s: %w", p.agent.Board.Name, p.sock, err)
	}
	return timesync.Status{ReadAt: at}, err
}

// Board is the board the probe runs on.
func (p *PTPProbe) Board() string { return p.agent.Board.Name }

// Socket is the probed ptp4l socket path on the board.
func (p *PTPProbe) Socket() string { return p.sock }

// Dropped counts samples dropped from a full queue (Status not called
// often enough) plus samples lost in transit (sequence gaps). Non-zero
// means the Monitor's series has holes; the windows across them are still
// bracketed by the samples around them.
func (p *PTPProbe) Dropped() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped + p.lost
}

// Close asks the agent to stop the probe and waits (up to 2 s) for its end
// sample. Later Status calls fail with timesync.ErrClosed, and so does a
// second Close.
func (p *PTPProbe) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	if already {
		return fmt.Errorf("%w: board %s: PTP probe of %s", timesync.ErrClosed, p.agent.Board.Name, p.sock)
	}
	defer p.forget()
	if err := p.agent.enc.Encode(agentproto.NewPTPProbeStop(p.id)); err != nil {
		return fmt.Errorf("%w: board %s: stop PTP probe: %w", ErrAgent, p.agent.Board.Name, err)
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-p.endedCh:
	case <-p.agent.readEnd:
	case <-t.C:
		return fmt.Errorf("%w: board %s: PTP probe %s did not end within 2s of its stop", ErrTimeout, p.agent.Board.Name, p.id)
	}
	return nil
}

func (p *PTPProbe) forget() {
	p.agent.mu.Lock()
	delete(p.agent.probes, p.id)
	p.agent.mu.Unlock()
}
