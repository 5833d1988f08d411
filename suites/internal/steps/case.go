package steps

// Every report.Case the steps return is built and finished here, and only
// here: the other files measure and hand their figures to these
// constructors.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/ros2/rostopic"
	"github.com/hilrig/hilrig/scopes"
)

// finish stamps the suite's labels on c and finalizes it (summary, checks
// and verdict against c.Bounds). A failing case carries the boards'
// captured console tails (flagged panic, oops, watchdog and OOM lines
// first).
func finish(env *Env, c *report.Case) *report.Case {
	if len(env.Labels) > 0 {
		c.Labels = append([]string(nil), env.Labels...)
	}
	c.Finalize()
	if c.Verdict == report.Fail && env.Rig != nil {
		if con := env.Rig.ConsoleReport(20); con != "" {
			c.Add(report.Noted("steps.finish", con))
		}
	}
	return c
}

// bounds returns the rack profile's bounds for path at payload, or a note
// saying there are none.
func bounds(env *Env, path Path, payload int) (report.Bounds, string, bool) {
	b, ok := env.Bounds(path.Transport, payload)
	if !ok {
		return b, fmt.Sprintf("bounds profile %s has no entry for %s at %d B: reported, not judged", env.Profile.Name, path, payload), false
	}
	return b, "", true
}

// gateOutcome is what the PTP gate made of a flow's windows.
type gateOutcome struct {
	boards []string
	// judge is the gate's monitor, for the recording's PTP channel.
	judge WindowJudge
	res   GateResult
	hist  *report.Histogram
	err   error
}

// ROS2Method says what a ROS 2 topic's latency is measured between: the
// message carries no in-band header, so the send time rides in its
// std_msgs/Header stamp.
func ROS2Method(t rostopic.Topic) string {
	return fmt.Sprintf("ROS 2 %s: from the message's header.stamp (the stamp clock, written by the peer's C code immediately before its DDS write) to the receive stamp (C, as the DDS take returned the sample), the stamp moved onto CLOCK_MONOTONIC by the clocks' offset read at receipt; messages numbered in arrival order (loss = sent − received)", t.Type)
}

// ros2Method is ROS2Method for p's ends: a DDS peer's, hilrig's bus
// (the publisher stamps in Go before Send, hilrig's frame keeps the
// sequence) or a bridged flow (BridgeMethod).
func ros2Method(p Params) string {
	switch {
	case p.Bridge != nil:
		return BridgeMethod(*p.ROS2, p.Bridge.Direction, p.Path.Middleware)
	case p.Path.Middleware == "":
		return fmt.Sprintf("ROS 2 %s on hilrig's bus: from the message's header.stamp (the stamp clock, written by the hilrig publisher immediately before Send) to the subscriber's receive stamp, the stamp moved onto CLOCK_MONOTONIC by the clocks' offset read at receipt; hilrig's frame carries the sequence (loss counted by gaps)", p.ROS2.Type)
	}
	return ROS2Method(*p.ROS2)
}

// flowCase is the case of one measured flow: the rig's figures, the
// method, the PTP gate's verdict on the samples (g, nil when ungated), the
// rack's bounds and the notes saying what ran.
func flowCase(env *Env, name string, p Params, run *Ran, g *gateOutcome, werr error) *report.Case {
	c := run.Result.Case(env.Suite, name, run.Flow.Spec)
	c.Transport = p.Path.String()
	peerNotes(c, p.Path, run.Flow.Publisher)
	c.Method = Method(env.Rack, run.From, run.To)
	if t := p.ROS2; t != nil {
		c.Method.Clocks = ros2Method(p) + "; " + c.Method.Clocks
		c.Add(report.Noted("steps.flowCase", fmt.Sprintf("ROS 2 topic %s: DDS topic %s, type %s, QoS %s", t.Name, t.DDSTopic(), t.DDSType(), t.Profile.Describe())))
	}
	if g != nil {
		c.Method.Clocks += "; samples gated per agent window (windows not locked throughout excluded)"
		if g.err != nil {
			// The merged, ungated distribution stays for diagnosis; the
			// case fails because its samples could not be vetted.
			c.Failure = g.err.Error()
		} else {
			applyGate(c, g.res, g.hist, g.boards)
		}
	}
	if b, note, ok := bounds(env, p.Path, p.Payload); ok {
		if p.BestEffort {
			b.MaxLost = nil
			c.Add(report.Noted("steps.flowCase", "best effort: loss is reported, not bounded"))
		}
		c.Bounds = &b
	} else {
		c.Add(report.Noted("steps.flowCase", note))
	}
	c.Add(report.Noted("steps.flowCase", fmt.Sprintf("publisher on %s, subscriber(s) on %s", run.From, run.To)))
	if n := peerRouteNote(p.Path, run.From, run.To); n != "" {
		c.Add(report.Noted("steps.flowCase", n))
	}
	if p.WarmUp > 0 {
		c.Add(report.Noted("steps.flowCase", fmt.Sprintf("%d warm-up messages sent first, not in the distribution", p.WarmUp)))
	}
	if werr != nil {
		c.Failure = werr.Error()
	}
	switch p.Judge {
	case JudgeThroughput:
		c.Bounds = nil
		if b, _, ok := bounds(env, p.Path, p.Payload); ok {
			out := report.Bounds{MinThroughputMBps: b.MinThroughputMBps, MinMsgsPerSec: b.MinMsgsPerSec, MaxCPUPercent: b.MaxCPUPercent}
			if !p.BestEffort {
				out.MaxLost = b.MaxLost
			}
			c.Bounds = &out
		}
		c.Add(report.Noted("steps.flowCase", "as fast as the publisher can send; latency here is queueing under saturation and is reported, not judged"))
		if p.Path == ShmLoan {
			c.Add(report.Noted("steps.flowCase", "loan path: the publisher writes 8 B (the sequence number) into each loaned slot; MB/s counts payload bytes handed over without a copy, not bytes produced"))
		}
	case JudgeScope:
		if b := c.Bounds; b != nil {
			c.Bounds = &report.Bounds{ScopeTolerance: b.ScopeTolerance, MaxLost: b.MaxLost}
		}
	}
	if p.replay != nil {
		p.replay.apply(c)
	}
	if a, ok := recordFlow(env, name, run, g); ok {
		c.Add(a)
	}
	return finish(env, c)
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
	res, h, err := gateWindows(windows, finals, j, boards...)
	if err != nil {
		return res, err
	}
	applyGate(c, res, h, boards)
	return res, nil
}

func applyGate(c *report.Case, res GateResult, h *report.Histogram, boards []string) {
	c.Histogram = h
	c.Excluded += res.ExcludedSamples
	c.Method.UncertaintyNs = res.UncertaintyNs
	c.Add(report.Noted("steps.applyGate", res.note(boards)))
}

// judgedCase adds to c what MeasureJudged's host probe saw (its p99 and
// max in Extra) and the attempts before this one.
func judgedCase(env *Env, c *report.Case, host *report.Histogram, history []string, attempt int, disturbed bool, why string) *report.Case {
	if host != nil && host.Count() > 0 {
		c.Add(report.Addition{By: "steps.judgedCase", Extra: map[report.ExtraKey]float64{
			report.ExtraHostWakeP99: float64(host.ValueAtQuantile(99)),
			report.ExtraHostWakeMax: float64(host.ValueAtQuantile(100)),
		}})
	}
	if len(history) > 0 {
		c.Add(report.Noted("steps.judgedCase", fmt.Sprintf("measured %d times: earlier attempts failed only where the host itself was late — %s", attempt, strings.Join(history, "; "))))
	}
	if disturbed {
		c.Add(report.Noted("steps.judgedCase", fmt.Sprintf("still disturbed after %d attempts (%s): the verdict stands; rerun on a quieter host", attempt, why)))
	}
	return finish(env, c)
}

// annotateLoaded drops the loaded case's bounds and fills its Extra and
// notes with the comparison and the load's report.
// A reliable flow must still lose nothing: that is the middleware's
// contract, not a latency bound, so a loss sets Failure.
func annotateLoaded(u *UnderLoad, profile string, reliable bool) {
	ic, lc := u.Idle.Case, u.Loaded.Case
	ic.Finalize()
	lc.Add(report.Addition{By: "steps.annotateLoaded", Unjudged: true}) // no idle bound checks carried over
	lc.Finalize()
	rep := u.Load.Load
	is, ls := ic.Summary, lc.Summary
	add := report.Addition{By: "steps.annotateLoaded", Extra: map[report.ExtraKey]float64{
		report.ExtraIdleP50: float64(is.P50), report.ExtraIdleP99: float64(is.P99),
	}}
	if is.P50 > 0 && is.P99 > 0 {
		u.P50Ratio, u.P99Ratio = float64(ls.P50)/float64(is.P50), float64(ls.P99)/float64(is.P99)
		add.Extra[report.ExtraP50Ratio], add.Extra[report.ExtraP99Ratio] = u.P50Ratio, u.P99Ratio
	}
	add.Extra[report.ExtraLoadThreads] = float64(rep.Threads)
	add.Extra[report.ExtraLoadCPUSec] = float64(rep.CPUNs) / 1e9
	add.Extra[report.ExtraLoadWallSec] = float64(rep.WallNs) / 1e9
	add.Extra[report.ExtraLoadCPUShare] = u.Share
	add.Notes = append(add.Notes, fmt.Sprintf("%s (bounds profile %s)", NoteLoadedUnbounded, profile),
		fmt.Sprintf("load: %d %s threads (one per CPU of %s), unpinned, SCHED_OTHER, running from before the flow's first message to after its last; consumed %.2f CPU-s over %.2f s wall = %.0f%% of %d cores",
			rep.Threads, rep.Kind, u.Board, float64(rep.CPUNs)/1e9, float64(rep.WallNs)/1e9, 100*u.Share, rep.Threads),
		fmt.Sprintf("vs idle (%s): p50 %s → %s (×%.2f), p99 %s → %s (×%.2f)", ic.Name,
			report.FormatNs(is.P50), report.FormatNs(ls.P50), u.P50Ratio, report.FormatNs(is.P99), report.FormatNs(ls.P99), u.P99Ratio))
	lc.Add(add)
	switch {
	case lc.Failure != "":
		// the flow's own failure stands
	case reliable && (lc.Lost > 0 || lc.Delivered < lc.Sent*int64(max(lc.Subscribers, 1))):
		lc.Failure = fmt.Sprintf("reliable flow under load: %d sent, %d delivered, %d lost", lc.Sent, lc.Delivered, lc.Lost)
	case u.Load.Reason != agentproto.EndStopped:
		lc.Failure = fmt.Sprintf("the load ended (%s) before the flow did: the loaded figures are not all under load", u.Load.Reason)
	case u.Share < MinLoadShare:
		lc.Failure = fmt.Sprintf("the load got %.0f%% of its %d cores (want ≥ %.0f%%): the scheduler starved it, so the loaded figures do not show the board under load", 100*u.Share, rep.Threads, 100*MinLoadShare)
	}
	lc.Finalize()
}

// rttCase is the RTT/2 case of a round trip between the rack's boards.
func rttCase(env *Env, name string, path Path, reliable bool, payload, warm int, f *rig.Echo, res *rig.EchoResult, werr error) *report.Case {
	spec := f.Spec
	from, to := spec.From, spec.To
	c := res.Case(env.Suite, name, spec)
	rtt := c.Histogram.Summary() // the full round trip
	c.Transport = path.String()
	c.Histogram = HalveHistogram(c.Histogram) // Finalize summarises RTT/2
	c.Add(report.Addition{By: "steps.rttCase", Extra: map[report.ExtraKey]float64{report.ExtraRTTP50: float64(rtt.P50), report.ExtraRTTP99: float64(rtt.P99),
		report.ExtraRTTP999: float64(rtt.P999), report.ExtraRTTMax: float64(rtt.Max)}})
	peerNotes(c, path, f.Pinger)
	c.Method = report.Method{Kind: report.RTTHalf,
		Clocks: fmt.Sprintf("CLOCK_MONOTONIC of the pinging board (%s); no clock sync", from)}
	if b, err := env.Rack.Board(from); err == nil && b.OnController() {
		c.Method.UncertaintyNs = rig.ClockReadNs()
	} else {
		c.Add(report.Noted("steps.rttCase", "clock-read uncertainty not quantified: it was measured on the controller host, not on "+from))
	}
	where := fmt.Sprintf("pinger on %s, echo on %s", from, to)
	if n := peerRouteNote(path, from, to); n != "" {
		where = fmt.Sprintf("pinger and echo in the one agent on %s (%s)", from, n)
	} else if from == to {
		where = fmt.Sprintf("pinger and echo in the one agent on %s (intra-process path)", from)
	}
	c.Add(report.Noted("steps.rttCase", "round trip between the rack's boards: "+where+"; the echo republishes each ping at once on a reply topic (copy path) carrying the ping's sequence number and send stamp",
		fmt.Sprintf("RTT/2: every sample is half of reply receipt − ping send stamp on the pinger's CLOCK_MONOTONIC, which assumes the two directions are symmetric; full RTT p50 %s, p99 %s (Extra)", report.FormatNs(rtt.P50), report.FormatNs(rtt.P99)),
		fmt.Sprintf("back-to-back pings with one in flight (no rate limit), %s wait, %d warm-up pings sent first, not in the distribution", spec.Wait, warm),
		"loss is pings never answered, counted by sequence number at the pinger"))
	if spec.Payload != payload {
		c.Add(report.Noted("steps.rttCase", fmt.Sprintf("payload padded from %d to %d B: the reply carries the ping's sequence number and send stamp", payload, spec.Payload)))
	}
	if path == ShmLoan {
		c.Add(report.Noted("steps.rttCase", "pings are sent on the loan (zero-copy) path; the echo replies on the copy path"))
	}
	if b, note, ok := bounds(env, path, payload); ok {
		b.Jitter = 0 // jitter of RTT/2 mixes both directions' wake-ups: reported, not bounded
		if !reliable {
			b.MaxLost = nil
			c.Add(report.Noted("steps.rttCase", "best effort: loss is reported, not bounded"))
		}
		c.Bounds = &b
	} else {
		c.Add(report.Noted("steps.rttCase", note))
	}
	if werr != nil && c.Failure == "" {
		c.Failure = werr.Error()
	}
	return finish(env, c)
}

// hostRTTCase is the RTT/2 case of the controller-host ping-pong fallback.
func hostRTTCase(env *Env, name string, path Path, reliable bool, payload int, spec hostPingPong, s report.Summary) *report.Case {
	c := report.NewCase(routeOf(env, path, hostEnds, hostEnds),
		report.CaseSpec{Suite: env.Suite, Name: name, Transport: path.String(), PayloadBytes: int64(payload),
			Reliability: kind.ReliabilityOf(reliable), Subscribers: 1,
			Method: report.Method{Kind: report.RTTHalf, UncertaintyNs: rig.ClockReadNs(),
				Clocks: "CLOCK_MONOTONIC of the pinging end (controller host)"}},
		report.Results{Sent: s.Count, Delivered: s.Count, Summary: s})
	where := "two processes on the controller host"
	if spec.NetNS {
		where += ", in two network namespaces joined by a veth pair"
	}
	c.Add(report.Noted("steps.hostRTTCase", fmt.Sprintf("FALLBACK: rack %s has fewer than two boards, so the round trip ran by `hilrig bench` ping-pong (%s), NOT on the rack's boards", env.Rack.Name, where),
		fmt.Sprintf("back-to-back round trips (no rate limit), futex wait, %d warm-up round trips", spec.Warmup),
		"percentiles only: mean and stddev are not reported by the ping-pong, so no histogram plot"))
	if b, _, ok := bounds(env, path, payload); ok {
		b.MaxLost, b.Jitter = nil, 0 // the ping-pong counts no loss; jitter not bounded for RTT/2
		c.Bounds = &b
	}
	return finish(env, c)
}

// hostEnds names both ends of the controller-host fallback in its route.
const hostEnds = "controller host"

// routeOf is the route of path's traffic from → to on env's rack
// (rig.RouteOf): the facts the report groups by.
func routeOf(env *Env, path Path, from, to string) *report.Route {
	rt := rig.RouteOf(env.Rack, path.Transport, from, to)
	return &rt
}

// startTally is what StartToFirst counted over its starts.
type startTally struct {
	hist                  *report.Histogram
	sent, delivered, lost int64
	from, to              string
	// discovery holds a peer's wait for its first matched reader, per
	// start; pub is the last start's publisher (its started message
	// describes the peer).
	discovery *report.Histogram
	pub       *rig.Endpoint
	// cold counts the starts whose publisher ran on a participant of its
	// own (agentproto.Started.Cold).
	cold int
}

// startCase is the node start → first message case.
func startCase(env *Env, name string, path Path, payload, n int, bound time.Duration, t startTally) *report.Case {
	c := report.NewCase(routeOf(env, path, t.from, t.to),
		report.CaseSpec{Suite: env.Suite, Name: name, Transport: path.String(), PayloadBytes: int64(payload),
			Reliability: kind.Reliable, Subscribers: 1, Bounds: &report.Bounds{Max: bound, MaxLost: report.Loss(0)},
			Method: report.Method{Kind: report.OneWay,
				Clocks: "controller CLOCK_MONOTONIC from the start requests to the publisher's started ack, plus message 1's one-way latency on " + Method(env.Rack, t.from, t.to).Clocks}},
		report.Results{Histogram: t.hist, Sent: t.sent, Delivered: t.delivered, Lost: t.lost})
	c.Add(report.Noted("steps.startCase", fmt.Sprintf("%d starts of a fresh subscriber node on %s and publisher node on %s, one %d B message each", n, t.to, t.from, payload),
		"includes the controller↔agent pipe round trips of the start requests (an upper bound by that much)"))
	if note := peerRouteNote(path, t.from, t.to); note != "" {
		c.Add(report.Noted("steps.startCase", note))
	}
	peerNotes(c, path, t.pub)
	if path.IsPeer() && t.discovery != nil && t.discovery.Count() > 0 {
		how := fmt.Sprintf("every endpoint opened a participant of its own and closed it at its end, so each start includes the peer's participant discovery (cold; %d of %d starts)", t.cold, n)
		if t.cold < n {
			how = fmt.Sprintf("not cold in %d of %d starts: %s keeps one runtime per process (docs/peers.md), so those starts discovered new endpoints of an existing runtime", n-t.cold, n, path.Middleware)
		}
		c.Add(report.Addition{By: "steps.startCase", Extra: map[report.ExtraKey]float64{
			report.ExtraDiscovery:    float64(t.discovery.ValueAtQuantile(50)),
			report.ExtraDiscoveryMax: float64(t.discovery.ValueAtQuantile(100)),
			report.ExtraColdStarts:   float64(t.cold),
		}, Notes: []string{fmt.Sprintf("discovery (seed 002: endpoints created → first message delivered): the time above; of it, the publisher's wait for its first matched reader: p50 %s, max %s (Extra); %s",
			report.FormatNs(t.discovery.ValueAtQuantile(50)), report.FormatNs(t.discovery.ValueAtQuantile(100)), how)}})
	}
	return finish(env, c)
}

// restartTally is what Restart counted over its restarts.
type restartTally struct {
	hist                  *report.Histogram
	sent, delivered, lost int64
	epochs                uint64
	failure               string
	from, to              string
	window                time.Duration
}

// restartCase is the publisher restart → subscriber resumption case.
func restartCase(env *Env, name string, path Path, payload, k int, bound time.Duration, t restartTally) *report.Case {
	c := report.NewCase(routeOf(env, path, t.from, t.to),
		report.CaseSpec{Suite: env.Suite, Name: name, Transport: path.String(), PayloadBytes: int64(payload),
			RateHz: 1000, Reliability: kind.Reliable, Subscribers: 1, Bounds: &report.Bounds{Max: bound}},
		report.Results{Histogram: t.hist, Sent: t.sent, Delivered: t.delivered, Lost: t.lost, Failure: t.failure})
	if t.epochs > 0 {
		c.Add(report.Noted("steps.restartCase", fmt.Sprintf("subscriber saw %d publisher epoch change(s)", t.epochs)))
	}
	c.Method = report.Method{Kind: report.OneWay, UncertaintyNs: int64(t.window),
		Clocks: "upper bound: controller CLOCK_MONOTONIC restart request → started ack + max latency of the subscriber's first 10 ms window after it, or that window's end (CLOCK_REALTIME, same host)"}
	c.Add(report.Noted("steps.restartCase", fmt.Sprintf("%d restarts of the publisher on %s, subscriber on %s kept running; loss across restarts is not judged", k, t.from, t.to)))
	return finish(env, c)
}

// Distribution compares the scope's per-message delays (when it can fetch
// them: scopes.DelayFetcher — gpio-capture, Keysight, sigrok) with the
// software latency samples of c (its histogram, expanded to one value per
// sample at the bucket's midpoint: HDR keeps 3 significant digits, ≤ 0.1 %).
// It records p50/p99 figures and the KS distance in c.Extra and the
// explanation in c.Notes; when the bounds set scope_tolerance it adds
// checks "scope_p50" and "scope_p99" (|scope − software| within the
// tolerance) to c.Checks, which Record keeps in the verdict. Returns nil
// when the delays are not available from both sides (with a note saying
// why). Blocks on instrument I/O. Call before harness.Record.
func (s *Scope) Distribution(ctx context.Context, c *report.Case) (*scopes.DistributionCheck, error) {
	var tol time.Duration
	if c.Bounds != nil {
		tol = c.Bounds.ScopeTolerance
	}
	d, skip, err := s.distribution(ctx, c.Histogram, tol)
	if err != nil || d == nil {
		if skip != "" {
			c.Add(report.Noted("steps.Distribution", skip))
		}
		return nil, err
	}
	var pairing string
	var pc *pairingCounts
	if s.Capture != nil {
		p := s.Capture.Pairing()
		pairing = p.String()
		pc = &pairingCounts{unmatched: uint64(len(p.Unmatched)), dropped: p.SenderDropped + p.ReceiverDropped, merged: p.SenderMerged + p.ReceiverMerged}
	}
	applyDistribution(c, *d, tol, pairing, pc)
	if r, ok := s.Instrument.(scopes.DelayResolver); ok && len(d.Rows) == 2 {
		// Delays from sampled records are only as fine as the sample
		// interval: say so when that is coarser than 0.1 % of the delay.
		if res, p50 := r.DelayResolution(), math.Abs(d.Rows[0].Scope); res > scopes.FineResolution*p50 {
			c.Add(report.Addition{By: "steps.Distribution", Extra: map[report.ExtraKey]float64{report.ExtraScopeResolution: res * 1e9},
				Notes: []string{fmt.Sprintf("scope per-message delays resolve to %s, coarser than 0.1 %% of their p50 %s: differences below that are not resolved",
					scopes.FormatSeconds(res), scopes.FormatSeconds(p50))}})
		}
	}
	return d, nil
}

// applyDistribution records a scope-vs-software distribution comparison
// in c: figures in Extra, the explanation in Notes and, when tol is set,
// the scope_p50/scope_p99 checks.
func applyDistribution(c *report.Case, d scopes.DistributionCheck, tol time.Duration, pairing string, p *pairingCounts) {
	add := report.Addition{By: "steps.applyDistribution", Extra: map[report.ExtraKey]float64{report.ExtraScopeDelays: float64(d.NScope)}}
	if len(d.Rows) == 2 {
		add.Extra[report.ExtraScopeP50] = d.Rows[0].Scope * 1e9
		add.Extra[report.ExtraScopeP99] = d.Rows[1].Scope * 1e9
		add.Extra[report.ExtraScopeDiffP50] = d.Rows[0].Diff * 1e9
		add.Extra[report.ExtraScopeDiffP99] = d.Rows[1].Diff * 1e9
		add.Extra[report.ExtraScopeKS] = d.KS
		add.Extra[report.ExtraScopeKSCritical] = d.KSCritical
	}
	add.Notes = append(add.Notes, "scope vs software distribution: "+d.Explanation)
	if p != nil {
		add.Extra[report.ExtraCaptureUnmatched] = float64(p.unmatched)
		add.Extra[report.ExtraCaptureDropped] = float64(p.dropped)
		add.Extra[report.ExtraCaptureMerged] = float64(p.merged)
		add.Notes = append(add.Notes, "gpio-capture pairing: "+pairing)
	}
	switch {
	case len(d.Rows) != 2:
	case tol == 0:
		add.Notes = append(add.Notes, "bounds profile sets no scope_tolerance: the quantile differences are reported, not judged")
	default:
		for _, r := range d.Rows {
			v := report.Pass
			if !r.Agree {
				v = report.Fail
			}
			add.Checks = append(add.Checks, report.Check{Bound: "scope_" + r.Name, Unit: "ns", Limit: float64(tol.Nanoseconds()),
				Measured: math.Abs(r.Diff) * 1e9, Verdict: v,
				Note: fmt.Sprintf("|scope %s − software %s| (scope %s, software %s)", r.Name, r.Name, scopes.FormatSeconds(r.Scope), scopes.FormatSeconds(r.Software))})
		}
	}
	c.Add(add)
}

// pairingCounts are a gpio-capture's unpaired edges.
type pairingCounts struct{ unmatched, dropped, merged uint64 }

// peerNotes names the middleware of c and, for a peer, writes what the
// agent reported beside the case: the peer's version, configuration and
// real transport, and the discovery time before the first message.
func peerNotes(c *report.Case, path Path, ep *rig.Endpoint) {
	c.Middleware = path.MiddlewareName()
	if path.Middleware == "" || ep == nil {
		return
	}
	st := ep.Started()
	add := report.Addition{By: "steps.peerNotes", Extra: map[report.ExtraKey]float64{report.ExtraDiscovery: float64(st.DiscoveryNs)}}
	if st.Peer != "" {
		add.Notes = []string{"peer: " + st.Peer}
	}
	c.Add(add)
}
