package soakrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
)

// RigFeed runs a plan's flows on a rig and implements Restarter and
// Finisher over the rig's endpoints. Used from the runner goroutine only.
type RigFeed struct {
	Rig  *rig.Rig
	Plan *Plan
	// Until is the soak's planned end (restarted publishers run to it).
	Until time.Time
	eps   map[*Track]*rig.Endpoint
	seq   int
	// droppedGone counts windows the rig dropped for replaced endpoints.
	droppedGone uint64
}

// StartRig starts every flow of the plan (subscribers first, then the
// publisher, as rig.Flow does) with the agents' window at Plan.AgentWindow
// and runs them until stopped. Blocks until every endpoint acknowledged.
func StartRig(ctx context.Context, r *rig.Rig, p *Plan, until time.Time) (*RigFeed, []*Track, error) {
	f := &RigFeed{Rig: r, Plan: p, Until: until, eps: map[*Track]*rig.Endpoint{}}
	var tracks []*Track
	for _, fl := range p.Flows {
		spec := rig.FlowSpec{Traffic: rig.Traffic{Name: fl.Name, Link: fl.Link, From: fl.From, Payload: fl.Payload, RateHz: fl.RateHz,
			Duration: time.Until(until) + time.Minute, Window: p.AgentWindow, Middleware: fl.Middleware, Schedule: fl.Schedule}}
		if fl.To != "" {
			spec.To = []string{fl.To}
		}
		if fl.Payload >= 1<<20 {
			spec.Depth = 4 // camera-like frames: a few slots, not 64 × 1 MiB
		}
		flow, err := r.Flow(ctx, spec)
		if err != nil {
			return f, tracks, fmt.Errorf("%w: flow %s: %w", ErrFeed, fl.Name, err)
		}
		m := &report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC (boards share this machine's clock)"}
		for i, s := range flow.Subscribers {
			t := &Track{Agent: flow.Spec.To[i], Flow: fl.Name, Role: agentproto.Subscriber, Src: Drain{s}, Method: m}
			f.eps[t] = s
			tracks = append(tracks, t)
		}
		t := &Track{Agent: flow.Spec.From, Flow: fl.Name, Role: agentproto.Publisher, Src: Drain{flow.Publisher}}
		f.eps[t] = flow.Publisher
		tracks = append(tracks, t)
	}
	return f, tracks, nil
}

// Restart stops t's endpoint, waits for its final, and starts the same
// spec under a new endpoint id on the same agent.
func (f *RigFeed) Restart(ctx context.Context, t *Track) (*Track, []agentproto.Window, time.Time, error) {
	ep := f.eps[t]
	if ep == nil {
		return nil, nil, time.Time{}, fmt.Errorf("%w: unknown track %s", ErrFeed, t.Flow)
	}
	if err := ep.Stop(); err != nil {
		return nil, nil, time.Time{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := ep.Wait(wctx); err != nil {
		return nil, t.Src.Take(), time.Time{}, fmt.Errorf("waiting for the stopped endpoint's final: %w", err)
	}
	left := t.Src.Take()
	f.droppedGone += ep.DroppedWindows()
	delete(f.eps, t)
	a, err := f.Rig.Agent(ctx, t.Agent)
	if err != nil {
		return nil, left, time.Time{}, err
	}
	f.seq++
	spec := ep.Spec
	spec.Endpoint = fmt.Sprintf("%s-r%d", baseID(ep.Spec.Endpoint), f.seq)
	spec.DurationNs = int64(time.Until(f.Until) + time.Minute)
	// A restarted subscriber joins its stream midway: what was published
	// before its first message is not its loss (a peer cannot tell that
	// in-band; hilrig's receivers ignore the flag).
	spec.LateJoin = spec.Role == agentproto.Subscriber
	nep, err := a.Start(ctx, spec)
	at := time.Now()
	if err != nil {
		return nil, left, at, err
	}
	nt := *t
	nt.Src = Drain{nep}
	f.eps[&nt] = nep
	return &nt, left, at, nil
}

func baseID(id string) string {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] == '-' && i+1 < len(id) && id[i+1] == 'r' {
			return id[:i]
		}
	}
	return id
}

// Finish stops the publishers, waits until every subscriber reports an
// agent window that began after its publisher's final and received
// nothing (it drained), then stops the subscribers and collects their
// last windows. Bounded by ctx and 30 s.
func (f *RigFeed) Finish(ctx context.Context) (map[*Track][]agentproto.Window, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	left := map[*Track][]agentproto.Window{}
	var errs []error
	pubEnd := map[string]int64{}
	for t, ep := range f.eps {
		if t.Role == agentproto.Publisher {
			_ = ep.Stop()
		}
	}
	for t, ep := range f.eps {
		if t.Role != agentproto.Publisher {
			continue
		}
		if _, err := ep.Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("publisher %s: %w", t.Flow, err))
		}
		pubEnd[t.Flow] = time.Now().UnixNano()
		left[t] = append(left[t], t.Src.Take()...)
	}
	poll := time.NewTicker(max(f.Plan.AgentWindow/4, 10*time.Millisecond))
	defer poll.Stop()
	for t := range f.eps {
		if t.Role != agentproto.Subscriber {
			continue
		}
		drained := false
		for !drained {
			ws := t.Src.Take()
			left[t] = append(left[t], ws...)
			for _, w := range ws {
				if w.StartNs >= pubEnd[t.Flow] && w.Received == 0 {
					drained = true
				}
			}
			if drained {
				break
			}
			select {
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("subscriber %s on %s did not drain: %w", t.Flow, t.Agent, ctx.Err()))
				drained = true
			case <-poll.C:
			}
		}
	}
	for t, ep := range f.eps {
		if t.Role != agentproto.Subscriber {
			continue
		}
		_ = ep.Stop()
		fin, err := ep.Wait(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("subscriber %s on %s: %w", t.Flow, t.Agent, err))
		} else if fin.Reason == agentproto.EndError {
			errs = append(errs, fmt.Errorf("subscriber %s on %s ended with an error: %s", t.Flow, t.Agent, fin.Error))
		}
		left[t] = append(left[t], t.Src.Take()...)
	}
	if n := f.dropped(); n > 0 {
		errs = append(errs, fmt.Errorf("%w: %d agent windows were dropped by the rig before the soak took them (rig.Options.MaxWindows too small: use Plan.RigMaxWindows)", ErrFeed, n))
	}
	return left, errors.Join(errs...)
}

// dropped sums the windows the rig dropped for the current endpoints
// (restarted ones were checked when they were replaced).
func (f *RigFeed) dropped() uint64 {
	var n uint64
	for _, ep := range f.eps {
		n += ep.DroppedWindows()
	}
	return n + f.droppedGone
}

// PowerControl returns nil when board has a power: block (the rig can
// power-cycle it), else the error naming the board.
func (f *RigFeed) PowerControl(board string) error {
	b, err := f.Rig.Rack.Board(board)
	if err != nil {
		return err
	}
	_, err = b.PowerFor()
	return err
}

// Recover power-cycles board through the rig, waits for its agent
// (redeployed; bounded by ctx and 5 min) and restarts every endpoint of
// tracks that ran on it, under new ids, running to Until. The old
// endpoints died with the board; their windows are not waited for.
func (f *RigFeed) Recover(ctx context.Context, board string, tracks []*Track) ([]*Track, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	a, err := f.Rig.RecoverBoard(ctx, board)
	if err != nil {
		return nil, err
	}
	out := append([]*Track(nil), tracks...)
	// Subscribers first, as rig.Flow starts them: a resumed publisher's
	// first messages then have a subscriber.
	for _, role := range []agentproto.Role{agentproto.Subscriber, agentproto.Publisher} {
		for i, t := range tracks {
			if t.Agent != board || t.Role != role {
				continue
			}
			ep := f.eps[t]
			if ep == nil {
				return nil, fmt.Errorf("%w: board %s: unknown track %s", ErrFeed, board, t.Flow)
			}
			f.droppedGone += ep.DroppedWindows()
			delete(f.eps, t)
			f.seq++
			spec := ep.Spec
			spec.Endpoint = fmt.Sprintf("%s-r%d", baseID(ep.Spec.Endpoint), f.seq)
			spec.DurationNs = int64(time.Until(f.Until) + time.Minute)
			nep, err := a.Start(ctx, spec)
			if err != nil {
				return nil, fmt.Errorf("%w: board %s: resuming %s %s after the power cycle: %w", ErrFeed, board, t.Role, t.Flow, err)
			}
			nt := *t
			nt.Src = Drain{nep}
			f.eps[&nt] = nep
			out[i] = &nt
		}
	}
	return out, nil
}

var _ Recoverer = (*RigFeed)(nil)

// PeerDescriptions are the peer middlewares' own report lines (version,
// configuration, real transport: agentproto.Started.Peer) of the feed's
// endpoints, one per distinct line; none for hilrig's endpoints.
func (f *RigFeed) PeerDescriptions() []string {
	var out []string
	for _, ep := range f.eps {
		if d := ep.Started().Peer; d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
