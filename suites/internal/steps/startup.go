package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
)

// StartToFirst measures, n times, the time from starting a fresh
// subscriber and publisher (each its own middleware node) to the first
// message delivered: the controller's CLOCK_MONOTONIC from the start
// requests to the publisher's "started" acknowledgement, plus the one-way
// latency of message 1 as the subscriber measured it. The pipe transit of
// the acknowledgement is included (an upper bound by that much). The case
// is judged against bound (every start's time) and no loss.
//
// On a peer middleware (path.Middleware) this is the peer's discovery
// time as seed 002 asks it — endpoints created to first message
// delivered: the publisher waits for its first matched reader before
// sending (docs/peers.md), and that wait is inside the started
// acknowledgement; the case's Extra holds the wait alone (p50, max) and
// its notes the peer's version, configuration and transport. Blocks.
func StartToFirst(ctx context.Context, env *Env, name string, path Path, payload, n int, bound time.Duration) (*report.Case, error) {
	t := startTally{hist: report.NewHistogram(), discovery: report.NewHistogram()}
	for range n {
		t0 := time.Now()
		f, fr, tb, err := start(ctx, env, Params{Path: path, Payload: payload, Count: 1, Drain: 5 * time.Second, ColdPeer: path.IsPeer()})
		if err != nil {
			return nil, err
		}
		started := time.Since(t0)
		t.from, t.to = fr, tb
		t.pub = f.Publisher
		if path.IsPeer() {
			t.discovery.Record(f.Publisher.Started().DiscoveryNs)
			if f.Publisher.Started().Cold {
				t.cold++
			}
		}
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		t.sent += int64(res.Publisher.Sent)
		for _, s := range res.Subscribers {
			t.delivered += int64(s.Received)
			t.lost += int64(s.Lost)
			if s.Latency != nil && s.Latency.Count() > 0 {
				t.hist.Record(int64(started) + s.Latency.ValueAtQuantile(100))
			}
		}
	}
	return startCase(env, name, path, payload, n, bound, t), nil
}

// Restart measures publisher restart → subscriber resumption k times on
// one long-lived subscriber: the publisher (1 kHz) is stopped, a new one
// is started on the same topic, and the time until the subscriber
// delivers again is bounded from above by the smaller of (a) controller
// time from the restart request to the new publisher's started ack plus
// the largest latency in the subscriber's first window with new messages,
// and (b) that window's end on the controller's clock (windows are 10 ms).
// The case is judged against bound. Blocks.
func Restart(ctx context.Context, env *Env, name string, path Path, payload, k int, bound time.Duration) (*report.Case, error) {
	const win = 10 * time.Millisecond
	f, from, to, err := start(ctx, env, Params{Path: path, Payload: payload, RateHz: 1000,
		Duration: time.Duration(k+2) * 3 * time.Second, Window: win})
	if err != nil {
		return nil, err
	}
	sub := f.Subscribers[0]
	pub := f.Publisher
	defer func() {
		_ = sub.Stop()
		_ = pub.Stop()
	}()
	t := restartTally{hist: report.NewHistogram(), from: from, to: to, window: win}
	// The subscriber's windows are taken as they arrive (the rig buffers a
	// bounded number): pending holds those since the last mark only.
	var pending []agentproto.Window
	var taken int
	var after int64 // a window counts only if it ends after this (Unix ns)
	take := func() {
		ws := sub.TakeWindows()
		taken += len(ws)
		pending = append(pending, ws...)
	}
	firstRx := func() *agentproto.Window {
		take()
		for i := range pending {
			// A window that ended before the new publisher started holds
			// the old one's late (retransmitted) messages, not a resumption.
			if pending[i].Received > 0 && pending[i].EndNs > after {
				return &pending[i]
			}
		}
		return nil
	}
	if err := poll(ctx, 5*time.Second, func() bool { return firstRx() != nil }); err != nil {
		return nil, fmt.Errorf("restart %s: first publisher never delivered: %w", path, err)
	}
	a, err := env.Rig.Agent(ctx, from)
	if err != nil {
		return nil, err
	}
	for i := range k {
		if err := pub.Stop(); err != nil {
			return nil, err
		}
		pf, err := pub.Wait(ctx)
		if err != nil {
			return nil, fmt.Errorf("restart %s: stopping publisher %s: %w", path, pub.Spec.Endpoint, err)
		}
		t.sent += int64(pf.Sent)
		// Let the stopped publisher's last messages land in closed windows.
		take()
		mark := taken
		if err := poll(ctx, time.Second, func() bool { take(); return taken >= mark+2 }); err != nil {
			return nil, fmt.Errorf("restart %s: subscriber stopped reporting windows: %w", path, err)
		}
		take()
		pending = nil // only windows after the new publisher's start count
		spec := pub.Spec
		spec.Endpoint = fmt.Sprintf("%s-r%d", f.Spec.Name, i+1)
		t0, t0Wall := time.Now(), time.Now().UnixNano()
		after = t0Wall
		np, err := a.Start(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("restart %s: new publisher: %w", path, err)
		}
		ack := time.Since(t0)
		pub = np
		var w *agentproto.Window
		if err := poll(ctx, 5*time.Second, func() bool { w = firstRx(); return w != nil }); err != nil {
			t.failure = fmt.Sprintf("restart %d: the subscriber did not resume within 5s of the new publisher", i+1)
			break
		}
		resumed := time.Duration(w.EndNs - t0Wall)
		if w.Latency != nil && w.Latency.Count() > 0 {
			resumed = min(resumed, ack+time.Duration(w.Latency.ValueAtQuantile(100)))
		}
		t.hist.Record(int64(resumed))
	}
	_ = sub.Stop()
	if sf, err := sub.Wait(ctx); err == nil {
		t.delivered, t.lost, t.epochs = int64(sf.Received), int64(sf.Lost), sf.Epochs
	}
	return restartCase(env, name, path, payload, k, bound, t), nil
}

// poll calls cond every 5 ms until it holds, ctx ends or d passes.
func poll(ctx context.Context, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
