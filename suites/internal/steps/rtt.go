package steps

import (
	"context"
	"fmt"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware/bench"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
)

// RoundTrip measures the round trip of transport (Intra, ShmCopy, ShmLoan,
// UDP) at payload bytes between the rack's boards: a pinger on the
// one-way cases' publisher board sends n pings (plus warm-up) back to
// back, one in flight, to an echo on their subscriber board (Route), which
// republishes each at once on a reply topic (copy path) carrying the
// ping's sequence number and send stamp. The pinger records RTT = reply
// receipt − its own send stamp, both on its own CLOCK_MONOTONIC, so no
// clock sync is involved; loss is counted by sequence number at the
// pinger. Intra runs pinger and echo in one agent on the first board.
// The case reports RTT/2 (which assumes a symmetric path); the full RTT
// percentiles are in Extra.
//
// Only when the rack has fewer than two boards (no board pair to ping
// between) do shm and udp fall back to `hilrig bench` ping-pong between
// the controller and a child process on the controller's host; the case
// says so. Blocks.
func (rc *RigContext) RoundTrip(ctx context.Context, name, transport string, reliable bool, payload, n int) (*report.Case, error) {
	if transport != Intra && len(rc.Rack.Boards) < 2 {
		return rc.benchRoundTrip(ctx, name, transport, reliable, payload, n)
	}
	from, to, link, err := rc.Route(transport)
	if err != nil {
		return nil, err
	}
	warm := min(n/10, 200)
	size := max(payload, agentproto.PingHeaderBytes)
	spec := rig.EchoSpec{Name: rc.name("rt"), From: from, To: to, BestEffort: !reliable, Payload: size,
		Count: uint64(n + warm), WarmUp: uint64(warm), Window: rc.Config.Window}
	switch transport {
	case Intra:
		spec.Transport = "intra"
	case ShmLoan:
		spec.Link, spec.Send = link, agentproto.SendLoan
	default:
		spec.Link = link
	}
	for _, b := range []string{from, to} {
		if _, err := rc.Agent(ctx, b); err != nil { // remembered for diagnostics
			return nil, err
		}
	}
	f, err := rc.Rig.Echo(ctx, spec)
	if err != nil {
		return nil, err
	}
	res, werr := f.Wait(ctx)
	if res == nil || res.Pinger == nil {
		return nil, werr
	}
	c := res.Case(rc.Suite, name, f.Spec)
	rtt := c.Histogram.Summary() // the full round trip
	c.Transport = transport
	c.Histogram = HalveHistogram(c.Histogram) // Finalize summarises RTT/2
	c.Extra = map[string]float64{"rtt_p50_ns": float64(rtt.P50), "rtt_p99_ns": float64(rtt.P99),
		"rtt_p999_ns": float64(rtt.P999), "rtt_max_ns": float64(rtt.Max)}
	c.Method = report.Method{Kind: report.RTTHalf,
		Clocks: fmt.Sprintf("CLOCK_MONOTONIC of the pinging board (%s); no clock sync", from)}
	if onController(rc.Rack, from) {
		c.Method.UncertaintyNs = ClockReadNs()
	} else {
		c.Notes = append(c.Notes, "clock-read uncertainty not quantified: it was measured on the controller host, not on "+from)
	}
	where := fmt.Sprintf("pinger on %s, echo on %s", from, to)
	if from == to {
		where = fmt.Sprintf("pinger and echo in the one agent on %s (intra-process path)", from)
	}
	c.Notes = append(c.Notes,
		"round trip between the rack's boards: "+where+"; the echo republishes each ping at once on a reply topic (copy path) carrying the ping's sequence number and send stamp",
		fmt.Sprintf("RTT/2: every sample is half of reply receipt − ping send stamp on the pinger's CLOCK_MONOTONIC, which assumes the two directions are symmetric; full RTT p50 %s, p99 %s (Extra)", report.FormatNs(rtt.P50), report.FormatNs(rtt.P99)),
		fmt.Sprintf("back-to-back pings with one in flight (no rate limit), %s wait, %d warm-up pings sent first, not in the distribution", waitName(spec.Wait), warm),
		"loss is pings never answered, counted by sequence number at the pinger")
	if size != payload {
		c.Notes = append(c.Notes, fmt.Sprintf("payload padded from %d to %d B: the reply carries the ping's sequence number and send stamp", payload, size))
	}
	if transport == ShmLoan {
		c.Notes = append(c.Notes, "pings are sent on the loan (zero-copy) path; the echo replies on the copy path")
	}
	if b, ok := rc.Bounds(transport, payload); ok {
		b.Jitter = 0 // jitter of RTT/2 mixes both directions' wake-ups: reported, not bounded
		if !reliable {
			b.MaxLost = nil
			c.Notes = append(c.Notes, "best effort: loss is reported, not bounded")
		}
		c.Bounds = &b
	} else {
		c.Notes = append(c.Notes, fmt.Sprintf("bounds profile %s has no entry for %s at %d B: reported, not judged", rc.Profile.Name, transport, payload))
	}
	if werr != nil && c.Failure == "" {
		c.Failure = werr.Error()
	}
	c.Finalize()
	return c, nil
}

// HalveHistogram returns a histogram of every sample of h halved (RTT →
// RTT/2), at h's precision: each HDR bucket's samples are recorded at half
// its midpoint. nil for nil.
func HalveHistogram(h *report.Histogram) *report.Histogram {
	if h == nil {
		return nil
	}
	out := report.NewHistogram()
	for _, b := range h.Buckets() {
		out.RecordN((b.FromNs+b.ToNs)/4, b.Count)
	}
	return out
}

func waitName(w string) string {
	if w == "" {
		return "futex"
	}
	return w
}

// onController reports whether board runs on the controller's machine
// (local or netns reach), where ClockReadNs was measured.
func onController(rack *fixtures.Rack, board string) bool {
	b, err := rack.Board(board)
	if err != nil {
		return false
	}
	re, err := fixtures.ParseReach(b.Reach)
	return err == nil && (re.Kind == fixtures.ReachLocal || re.Kind == fixtures.ReachNetns)
}

// benchRoundTrip is the fallback for racks with fewer than two boards:
// `hilrig bench` ping-pong between the controller and a child process on
// the controller's host (for udp in two network namespaces when root).
// Same middleware, but not on the rack's boards; the case says so.
func (rc *RigContext) benchRoundTrip(ctx context.Context, name, transport string, reliable bool, payload, n int) (*report.Case, error) {
	cfg := bench.PingPongConfig{Wait: "futex", Sizes: []int{payload}, RoundTrips: n, Warmup: min(n/10, 200),
		Reliable: reliable, Launcher: bench.Launcher{Exe: rc.binary, Args: []string{"bench"}}}
	switch transport {
	case Intra:
		cfg.Transport = bench.TIntra
	case ShmCopy:
		cfg.Transport = bench.TShm
	case ShmLoan:
		cfg.Transport, cfg.Path = bench.TShm, "loan"
	case UDP:
		cfg.Transport = bench.TUDP
		cfg.NetNS = rc.Rack.Claims("multi-host")
	default:
		return nil, fmt.Errorf("steps: round trip transport %q", transport)
	}
	rep, err := bench.PingPong(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("steps: ping-pong %s returned no result", transport)
	}
	r := rep.Results[0]
	h := r.OneWay // every percentile of RTT halved
	c := &report.Case{Suite: rc.Suite, Name: name, Transport: transport, PayloadBytes: int64(payload),
		Reliability: reliability(reliable), Subscribers: 1, Sent: h.Count, Delivered: h.Count,
		Method: report.Method{Kind: report.RTTHalf, UncertaintyNs: ClockReadNs(),
			Clocks: "CLOCK_MONOTONIC of the pinging end (controller host)"},
		Summary: report.Summary{Count: h.Count, Min: h.Min, P50: h.P50, P90: h.P90, P99: h.P99, P999: h.P999,
			Max: h.Max, Jitter: h.P99 - h.P50}}
	where := "two processes on the controller host"
	if cfg.NetNS {
		where += ", in two network namespaces joined by a veth pair"
	}
	c.Notes = append(c.Notes, fmt.Sprintf("FALLBACK: rack %s has fewer than two boards, so the round trip ran by `hilrig bench` ping-pong (%s), NOT on the rack's boards", rc.Rack.Name, where),
		fmt.Sprintf("back-to-back round trips (no rate limit), futex wait, %d warm-up round trips", cfg.Warmup),
		"percentiles only: mean and stddev are not reported by the ping-pong, so no histogram plot")
	if b, ok := rc.Bounds(transport, payload); ok {
		b.MaxLost, b.Jitter = nil, 0 // the ping-pong counts no loss; jitter not bounded for RTT/2
		c.Bounds = &b
	}
	return c, nil
}

func reliability(rel bool) string {
	if rel {
		return "reliable"
	}
	return "best-effort"
}
