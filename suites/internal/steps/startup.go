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
// the acknowledgement is included (an upper bound by that much). Blocks.
func (rc *RigContext) StartToFirst(ctx context.Context, name, transport string, payload, n int) (*report.Case, error) {
	h := report.NewHistogram()
	c := &report.Case{Suite: rc.Suite, Name: name, Transport: transport, PayloadBytes: int64(payload),
		Reliability: "reliable", Subscribers: 1, Histogram: h}
	var from, to string
	for range n {
		t0 := time.Now()
		f, fr, tb, err := rc.Start(ctx, Params{Transport: transport, Payload: payload, Count: 1, Drain: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		started := time.Since(t0)
		from, to = fr, tb
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		c.Sent += int64(res.Publisher.Sent)
		for _, s := range res.Subscribers {
			c.Delivered += int64(s.Received)
			c.Lost += int64(s.Lost)
			if s.Latency != nil && s.Latency.Count() > 0 {
				h.Record(int64(started) + s.Latency.ValueAtQuantile(100))
			}
		}
	}
	c.Method = report.Method{Kind: report.OneWay,
		Clocks: "controller CLOCK_MONOTONIC from the start requests to the publisher's started ack, plus message 1's one-way latency on " + rc.Method(from, to).Clocks}
	c.Notes = append(c.Notes, fmt.Sprintf("%d starts of a fresh subscriber node on %s and publisher node on %s, one 64 B message each", n, to, from),
		"includes the controller↔agent pipe round trips of the start requests (an upper bound by that much)")
	return c, nil
}

// Restart measures publisher restart → subscriber resumption k times on
// one long-lived subscriber: the publisher (1 kHz) is stopped, a new one
// is started on the same topic, and the time until the subscriber
// delivers again is bounded from above by the smaller of (a) controller
// time from the restart request to the new publisher's started ack plus
// the largest latency in the subscriber's first window with new messages,
// and (b) that window's end on the controller's clock (windows are 10 ms).
// Blocks.
func (rc *RigContext) Restart(ctx context.Context, name, transport string, payload, k int) (*report.Case, error) {
	const win = 10 * time.Millisecond
	f, from, to, err := rc.Start(ctx, Params{Transport: transport, Payload: payload, RateHz: 1000,
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
	h := report.NewHistogram()
	c := &report.Case{Suite: rc.Suite, Name: name, Transport: transport, PayloadBytes: int64(payload),
		RateHz: 1000, Reliability: "reliable", Subscribers: 1, Histogram: h}
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
		return nil, fmt.Errorf("restart %s: first publisher never delivered: %w", transport, err)
	}
	a, err := rc.Agent(ctx, from)
	if err != nil {
		return nil, err
	}
	for i := range k {
		if err := pub.Stop(); err != nil {
			return nil, err
		}
		pf, err := pub.Wait(ctx)
		if err != nil {
			return nil, fmt.Errorf("restart %s: stopping publisher %s: %w", transport, pub.Spec.Endpoint, err)
		}
		c.Sent += int64(pf.Sent)
		// Let the stopped publisher's last messages land in closed windows.
		take()
		mark := taken
		if err := poll(ctx, time.Second, func() bool { take(); return taken >= mark+2 }); err != nil {
			return nil, fmt.Errorf("restart %s: subscriber stopped reporting windows: %w", transport, err)
		}
		take()
		pending = nil // only windows after the new publisher's start count
		spec := pub.Spec
		spec.Endpoint = fmt.Sprintf("%s-r%d", f.Spec.Name, i+1)
		t0, t0Wall := time.Now(), time.Now().UnixNano()
		after = t0Wall
		np, err := a.Start(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("restart %s: new publisher: %w", transport, err)
		}
		ack := time.Since(t0)
		pub = np
		var w *agentproto.Window
		if err := poll(ctx, 5*time.Second, func() bool { w = firstRx(); return w != nil }); err != nil {
			c.Failure = fmt.Sprintf("restart %d: the subscriber did not resume within 5s of the new publisher", i+1)
			break
		}
		bound := time.Duration(w.EndNs - t0Wall)
		if w.Latency != nil && w.Latency.Count() > 0 {
			bound = min(bound, ack+time.Duration(w.Latency.ValueAtQuantile(100)))
		}
		h.Record(int64(bound))
	}
	_ = sub.Stop()
	if sf, err := sub.Wait(ctx); err == nil {
		c.Delivered, c.Lost = int64(sf.Received), int64(sf.Lost)
		if sf.Epochs > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("subscriber saw %d publisher epoch change(s)", sf.Epochs))
		}
	}
	c.Method = report.Method{Kind: report.OneWay, UncertaintyNs: int64(win),
		Clocks: "upper bound: controller CLOCK_MONOTONIC restart request → started ack + max latency of the subscriber's first 10 ms window after it, or that window's end (CLOCK_REALTIME, same host)"}
	c.Notes = append(c.Notes, fmt.Sprintf("%d restarts of the publisher on %s, subscriber on %s kept running; loss across restarts is not judged", k, from, to))
	return c, nil
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
