package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/timesync"
)

// ptpProbe polls the board's ptp4l management socket at a period and
// streams every reading (or failed poll) to the controller as a
// ptp-sample. It runs in its own goroutine; the agent's main loop owns
// the probes map (start, stop and shutdown all happen there).
type ptpProbe struct {
	req    agentproto.PTPProbe
	cancel context.CancelCauseFunc
}

// ptpProbeMsg starts or stops a probe. Errors about the request itself
// (duplicate id, unknown probe) are sent as error messages with the
// probe id in Endpoint; the returned error is only ErrOutput.
func (a *agent) ptpProbeMsg(ctx context.Context, p *agentproto.PTPProbe) error {
	send := func(msg *agentproto.Msg) error {
		if err := a.enc.Encode(msg); err != nil {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
		return nil
	}
	if a.probes == nil {
		a.probes = map[string]*ptpProbe{}
	}
	if p.Stop {
		pr, ok := a.probes[p.Probe]
		if !ok {
			return send(agentproto.NewError(agentproto.CodeUnknownEndpoint, p.Probe, fmt.Errorf("no running PTP probe %q", p.Probe)))
		}
		delete(a.probes, p.Probe)
		pr.cancel(errStopped)
		return nil
	}
	if _, dup := a.probes[p.Probe]; dup {
		return send(agentproto.NewError(agentproto.CodeDuplicateEndpoint, p.Probe, fmt.Errorf("PTP probe %q is already running", p.Probe)))
	}
	pctx, cancel := context.WithCancelCause(ctx)
	pr := &ptpProbe{req: *p, cancel: cancel}
	a.probes[p.Probe] = pr
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		pr.run(pctx, a)
	}()
	return nil
}

// stopPTPProbes cancels every probe (agent shutdown); each sends its
// end sample before the agent's wait group is done.
func (a *agent) stopPTPProbes() {
	for id, pr := range a.probes {
		pr.cancel(errShutdown)
		delete(a.probes, id)
	}
}

// run polls until ctx is cancelled. The first poll is immediate, so the
// controller learns at once whether the socket is there. A failed dial
// is retried at every period: ptp4l may come (back) later, and the
// controller must see each failed poll, not silence.
func (pr *ptpProbe) run(ctx context.Context, a *agent) {
	period := time.Duration(pr.req.PeriodNs)
	opts := &timesync.PTP4LOptions{RequestTimeout: time.Duration(pr.req.RequestTimeoutNs)}
	var src *timesync.PTP4L
	defer func() {
		if src != nil {
			_ = src.Close()
		}
	}()
	var seq uint64
	send := func(s agentproto.PTPSample) {
		if err := a.enc.Encode(agentproto.NewPTPSample(s)); err != nil {
			a.opts.Logger.Warn("cannot report PTP sample", "probe", pr.req.Probe, "err", err)
		}
	}
	failed := func(at time.Time, err error) agentproto.PTPSample {
		return agentproto.PTPSample{Probe: pr.req.Probe, Seq: seq, AtNs: at.UnixNano(),
			Err: fmt.Sprintf("board %s: ptp4l socket %s: %v", a.opts.Board, pr.req.Socket, err)}
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		var s agentproto.PTPSample
		if src == nil {
			var err error
			if src, err = timesync.DialPTP4L(ctx, pr.req.Socket, opts); err != nil {
				src = nil
				if ctx.Err() != nil {
					break
				}
				seq++
				s = failed(time.Now(), err)
			}
		}
		if src != nil {
			st, err := src.Status(ctx)
			if ctx.Err() != nil {
				break // a poll cut short by stop is not a sample
			}
			seq++
			if err != nil {
				s = failed(st.ReadAt, err)
			} else {
				s = agentproto.PTPSampleOf(pr.req.Probe, seq, st)
			}
		}
		send(s)
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	end := agentproto.PTPEndStopped
	if context.Cause(ctx) != errStopped {
		end = agentproto.PTPEndShutdown
	}
	seq++
	send(agentproto.PTPSample{Probe: pr.req.Probe, Seq: seq, AtNs: time.Now().UnixNano(), End: end})
}
