package steps

import (
	"context"
	"fmt"

	"github.com/hilrig/hilrig/middleware/bench"
	"github.com/hilrig/hilrig/report"
)

// RoundTrip measures the round trip of transport (Intra, ShmCopy, ShmLoan,
// UDP) at payload bytes with middleware/bench's ping-pong: the pinging end
// stamps send and echo receipt on one CLOCK_MONOTONIC, so no clock sync is
// involved; the case reports RTT/2 (which assumes a symmetric path).
//
// The agents have no echo role, so this runs `hilrig bench` ping-pong
// between the controller and a child process on the controller's host
// (for udp in two network namespaces when root): it is the same
// middleware, but not on the rack's boards. The case says so. Blocks.
func (rc *RigContext) RoundTrip(ctx context.Context, name, transport string, reliable bool, payload, n int) (*report.Case, error) {
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
	c.Notes = append(c.Notes, "round trip by `hilrig bench` ping-pong ("+where+"); the agents have no echo role",
		fmt.Sprintf("back-to-back round trips (no rate limit), futex wait, %d warm-up round trips", cfg.Warmup),
		"percentiles only: mean and stddev are not reported by the ping-pong, so no histogram plot")
	if b, ok := rc.Bounds(transport, payload); ok {
		b.MaxLost, b.Jitter = nil, 0 // a round trip has no loss; jitter not bounded for RTT/2
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
