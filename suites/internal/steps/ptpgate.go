package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/fixtures/agentproto"
	"github.com/hilrig/hilrig/report"
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

// GateWindows rebuilds c.Histogram from the subscribers' window summaries
// (windows[i] are subscriber i's, as rig.FlowResult.Windows holds them),
// keeping only the windows j judges locked throughout on every one of
// boards. Windows are bounded by the subscriber's CLOCK_REALTIME (Unix
// ns), which on a PTP rack is the controller's CLOCK_REALTIME too, the
// clock the Monitor stamps its polls with. The samples of excluded
// windows are added to c.Excluded (they are neither delivered-late nor
// lost: their latency is just not trustworthy), c.Method.UncertaintyNs
// becomes the largest WindowQuality.Bound over the included windows, and
// a note records the exclusion.
//
// finals, when not nil, are the subscribers' final summaries: the windows
// of subscriber i must hold every latency sample of finals[i] (the rig
// drops windows nobody takes past its buffer), else GateWindows fails
// with ErrGateIncomplete and leaves c untouched, because samples in a
// missing window could be neither judged nor counted. Does not block.
func GateWindows(c *report.Case, windows [][]agentproto.Window, finals []*agentproto.Final, j WindowJudge, boards ...string) (GateResult, error) {
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
			return res, fmt.Errorf("%w: subscriber %s: windows hold %d latency samples, its final %d (windows dropped from the rig's buffer)",
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
				return GateResult{}, fmt.Errorf("PTP gate: window %d of %s [%s, %s]: %w", w.Index, w.Endpoint,
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
					res.FirstReason = fmt.Sprintf("window %d of %s: %s", w.Index, w.Endpoint, unlockedReason(q))
				}
				continue
			}
			res.UncertaintyNs = max(res.UncertaintyNs, int64(q.Bound))
			if w.Latency != nil {
				h.Merge(w.Latency)
			}
		}
	}
	c.Histogram = h
	c.Excluded += res.ExcludedSamples
	c.Method.UncertaintyNs = res.UncertaintyNs
	c.Notes = append(c.Notes, res.note(boards))
	return res, nil
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

func unlockedReason(q timesync.WindowQuality) string {
	for _, b := range q.Boards {
		if !b.Locked {
			return b.Board + ": " + b.Reason
		}
	}
	return "not locked"
}

// ptpGate is the Monitor watching the two boards of one cross-host flow.
type ptpGate struct {
	mon     *timesync.Monitor
	boards  []string
	period  time.Duration
	closers []func() error
}

// gated reports whether one-way samples from → to must be PTP-gated: the
// rack claims ptp and the boards are on different hosts (on one host both
// stamps come from one kernel clock and no PTP is involved).
func (rc *RigContext) gated(from, to string) bool {
	return rc.Rack.Claims(fixtures.CapPTP) && !sameHost(rc.Rack, from, to)
}

// startGate dials both boards' ptp4l, starts a Monitor polling them at a
// quarter of the window (within [50 ms, timesync.DefaultPeriod]) and
// waits for its first sample of each, so the first window is bracketed.
// ssh boards' sockets are on the board, out of the controller's reach
// (the rig has no agent-side PTP probe): that is an error, not a silently
// ungated case. Blocks up to a few poll periods.
func (rc *RigContext) startGate(ctx context.Context, from, to string, window time.Duration) (g *ptpGate, err error) {
	bound := time.Microsecond
	if rc.Rack.PTP != nil && rc.Rack.PTP.MaxOffset > 0 {
		bound = rc.Rack.PTP.MaxOffset
	}
	g = &ptpGate{period: min(timesync.DefaultPeriod, max(window/4, 50*time.Millisecond))}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	var tb []timesync.Board
	for _, n := range []string{from, to} {
		b, err := rc.Rack.Board(n)
		if err != nil {
			return nil, err
		}
		switch {
		case b.Clock.PTP4LSocket == "":
			return nil, fmt.Errorf("%w: rack %s claims ptp but board %s names no clock.ptp4l_socket", ErrPTPGate, rc.Rack.Name, n)
		case !OnController(b):
			return nil, fmt.Errorf("%w: %w: board %s: ptp4l socket %s is on the board; reading it needs an agent-side PTP probe, which the rig lacks", ErrPTPGate, ErrPTPRemote, n, b.Clock.PTP4LSocket)
		}
		p, err := timesync.DialPTP4L(ctx, b.Clock.PTP4LSocket, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: board %s: %w", ErrPTPGate, n, err)
		}
		g.closers = append(g.closers, p.Close)
		tb = append(tb, timesync.Board{Name: n, Source: p})
		g.boards = append(g.boards, n)
	}
	if g.mon, err = timesync.NewMonitor(tb, timesync.MonitorConfig{Period: g.period, Bound: bound, Logger: rc.Log}); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := g.mon.Start(ctx); err != nil {
		return nil, err
	}
	if err := waitCovered(ctx, g.mon, g.boards, t0, 4*g.period+2*time.Second); err != nil {
		return nil, fmt.Errorf("%w: first PTP poll: %w", ErrPTPGate, err)
	}
	return g, nil
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
