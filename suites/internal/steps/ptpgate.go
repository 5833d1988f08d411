package steps

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/timesync"
)

// WindowJudge answers whether the named boards' clocks were locked
// throughout [from, to] and to within what. *timesync.Monitor is the
// implementation; declared here, where it is consumed.
type WindowJudge interface {
	Window(from, to time.Time, boards ...string) (timesync.WindowQuality, error)
}

// GateResult is what [GateWindows] did to a case.
type GateResult struct {
	// Windows is how many subscriber windows were judged; ExcludedWindows
	// how many of them were not locked throughout.
	Windows, ExcludedWindows int
	// ExcludedSamples is the latency samples of the excluded windows (the
	// amount added to Case.Excluded).
	ExcludedSamples int64
	// UncertaintyNs is the largest clock bound over the included windows
	// (0 when none was included).
	UncertaintyNs int64
	// FirstReason says why the first excluded window was excluded.
	FirstReason string
}

// gateWindows judges every subscriber window on boards (see GateWindows)
// and returns the histogram of the included windows' samples. Does not
// block.
func gateWindows(windows [][]agentproto.Window, finals []*agentproto.Final, j WindowJudge, boards ...string) (GateResult, *report.Histogram, error) {
	var res GateResult
	for i, ws := range windows {
		if i >= len(finals) || finals[i] == nil || finals[i].Latency == nil {
			continue
		}
		var n int64
		for k := range ws {
			if ws[k].Latency != nil {
				n += ws[k].Latency.Count()
			}
		}
		if want := finals[i].Latency.Count(); n != want {
			return res, nil, fmt.Errorf("%w: subscriber %s: windows hold %d latency samples, its final %d (windows dropped from the rig's buffer)",
				ErrGateIncomplete, finals[i].Endpoint, n, want)
		}
	}
	h := report.NewHistogram()
	for _, ws := range windows {
		for k := range ws {
			w := &ws[k]
			from, to := time.Unix(0, w.StartNs), time.Unix(0, w.EndNs)
			q, err := j.Window(from, to, boards...)
			if err != nil {
				return GateResult{}, nil, fmt.Errorf("PTP gate: window %d of %s [%s, %s]: %w", w.Index, w.Endpoint,
					from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
			}
			res.Windows++
			var n int64
			if w.Latency != nil {
				n = w.Latency.Count()
			}
			if !q.Locked {
				res.ExcludedWindows++
				res.ExcludedSamples += n
				if res.FirstReason == "" {
					res.FirstReason = fmt.Sprintf("window %d of %s: %s", w.Index, w.Endpoint, unlockedReason(j, q))
				}
				continue
			}
			res.UncertaintyNs = max(res.UncertaintyNs, int64(q.Bound))
			if w.Latency != nil {
				h.Merge(w.Latency)
			}
		}
	}
	return res, h, nil
}

func (r GateResult) note(boards []string) string {
	on := strings.Join(boards, " and ")
	inc := r.Windows - r.ExcludedWindows
	unc := "uncertainty not quantified (no window included)"
	if inc > 0 {
		unc = fmt.Sprintf("uncertainty ±%s = the largest summed PTP clock bound of %s over the %d included window(s)", report.FormatNs(r.UncertaintyNs), on, inc)
	}
	if r.ExcludedWindows == 0 {
		return fmt.Sprintf("PTP gate: all %d window(s) locked on %s; %s", r.Windows, on, unc)
	}
	return fmt.Sprintf("PTP gate: %d of %d window(s) not locked throughout on %s, their %d sample(s) excluded from the distribution (first: %s); %s",
		r.ExcludedWindows, r.Windows, on, r.ExcludedSamples, r.FirstReason, unc)
}

// seriesJudge is a WindowJudge that also hands out the polls it judged
// on (*timesync.Monitor does): then an exclusion names the read error
// itself (socket gone, naming board and socket), not only its condition.
type seriesJudge interface {
	Series(board string) ([]timesync.Sample, error)
}

func unlockedReason(j WindowJudge, q timesync.WindowQuality) string {
	for _, b := range q.Boards {
		if b.Locked {
			continue
		}
		r := b.Board + ": " + b.Reason
		if sj, ok := j.(seriesJudge); ok {
			if e := readError(sj, b.Board, q.From, q.To); e != "" {
				r += " (" + e + ")"
			}
		}
		return r
	}
	return "not locked"
}

// readError returns the first read error among the board's polls that
// bracket [from, to] ("" when none failed).
func readError(sj seriesJudge, board string, from, to time.Time) string {
	ss, err := sj.Series(board)
	if err != nil {
		return ""
	}
	first := sort.Search(len(ss), func(i int) bool { return ss[i].At.After(from) }) - 1
	for _, s := range ss[max(first, 0):] {
		if s.Err != "" {
			return s.Err
		}
		if !s.At.Before(to) {
			break
		}
	}
	return ""
}

// ptpGate is the Monitor watching the two boards of one cross-host flow.
type ptpGate struct {
	mon     *timesync.Monitor
	boards  []string
	period  time.Duration
	closers []func() error
}

// gated reports whether one-way samples from → to must be PTP-gated: the
// rack claims ptp and the boards do not share a kernel (on one kernel both
// stamps come from one clock and no PTP is involved).
func gated(rack *fixtures.Rack, from, to string) bool {
	return rack.Claims(fixtures.CapPTP) && !rack.SameKernel(from, to)
}

// startGate starts a Monitor on both boards' ptp4l, polling at a quarter
// of the window (within [50 ms, timesync.DefaultPeriod]), and waits for
// its first sample of each, so the first window is bracketed. A board on
// the controller's host is read over its management socket directly;
// any other board (ssh) through an agent-side probe ([rig.PTPProbe]):
// the board's agent polls its own socket and streams the samples back.
// Either way the first poll must succeed, else the error names the board
// and the socket. Blocks up to a few poll periods (plus the agent's start
// for a board whose agent is not up yet).
func startGate(ctx context.Context, env *Env, from, to string, window time.Duration) (g *ptpGate, err error) {
	// 0: timesync.DefaultBound by timestamping mode (a fixed 1 µs flaps
	// with software timestamping, which the sim rack's ptp4l uses).
	var bound time.Duration
	if env.Rack.PTP != nil && env.Rack.PTP.MaxOffset > 0 {
		bound = env.Rack.PTP.MaxOffset
	}
	gate := &ptpGate{period: min(timesync.DefaultPeriod, max(window/4, 50*time.Millisecond))}
	// Not g: an error return sets g to nil before this runs.
	defer func() {
		if err != nil {
			gate.close()
		}
	}()
	monPeriod := gate.period
	var tb []timesync.Board
	for _, n := range []string{from, to} {
		b, err := env.Rack.Board(n)
		if err != nil {
			return nil, err
		}
		if b.Clock.PTP4LSocket == "" {
			return nil, fmt.Errorf("%w: rack %s claims ptp but board %s names no clock.ptp4l_socket", ErrPTPGate, env.Rack.Name, n)
		}
		var src timesync.Source
		if b.OnController() {
			p, err := timesync.DialPTP4L(ctx, b.Clock.PTP4LSocket, nil)
			if err != nil {
				return nil, fmt.Errorf("%w: board %s: %w", ErrPTPGate, n, err)
			}
			gate.closers = append(gate.closers, p.Close)
			src = p
		} else {
			a, err := env.Rig.Agent(ctx, n)
			if err != nil {
				return nil, fmt.Errorf("%w: board %s: agent for the PTP probe of %s: %w", ErrPTPGate, n, b.Clock.PTP4LSocket, err)
			}
			p, err := a.StartPTPProbe(ctx, b.Clock.PTP4LSocket, &rig.PTPProbeOptions{Period: gate.period})
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrPTPGate, err) // names board and socket
			}
			gate.closers = append(gate.closers, p.Close)
			src = p
			// The probe's Status waits for the agent's next sample: a
			// Monitor polling a little faster than the agent follows the
			// agent's pace and records every sample (never a backlog).
			monPeriod = gate.period - gate.period/20
		}
		tb = append(tb, timesync.Board{Name: n, Source: src, Policy: PTPPolicy(env.Rack)})
		gate.boards = append(gate.boards, n)
	}
	if gate.mon, err = timesync.NewMonitor(tb, timesync.MonitorConfig{Period: monPeriod, Bound: bound, Logger: env.Log}); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := gate.mon.Start(ctx); err != nil {
		return nil, err
	}
	if err := waitCovered(ctx, gate.mon, gate.boards, t0, 4*gate.period+2*time.Second); err != nil {
		return nil, fmt.Errorf("%w: first PTP poll: %w", ErrPTPGate, err)
	}
	return gate, nil
}

// settle waits until every board has a poll at or after the last window's
// end (a window is judged only when bracketed by polls). On timeout it
// returns nothing: the unbracketed windows are then judged not locked and
// excluded, which is the honest outcome.
func (g *ptpGate) settle(ctx context.Context, windows [][]agentproto.Window) {
	var end int64
	for _, ws := range windows {
		for _, w := range ws {
			end = max(end, w.EndNs)
		}
	}
	if end > 0 {
		_ = waitCovered(ctx, g.mon, g.boards, time.Unix(0, end), 4*g.period+2*time.Second)
	}
}

// close stops the Monitor and closes the ptp4l connections. Idempotent.
func (g *ptpGate) close() {
	if g.mon != nil {
		g.mon.Stop()
	}
	for _, c := range g.closers {
		_ = c()
	}
	g.closers = nil
}

// waitCovered polls the Monitor's series until every board has a sample
// at or after t, or timeout/ctx ends.
func waitCovered(ctx context.Context, m *timesync.Monitor, boards []string, t time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, b := range boards {
			s, err := m.Series(b)
			if err != nil {
				return err
			}
			if len(s) == 0 || s[len(s)-1].At.Before(t) {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("no PTP poll of %s at or after %s within %s", strings.Join(boards, ", "), t.UTC().Format(time.RFC3339Nano), timeout)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
