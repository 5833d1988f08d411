package steps

import (
	"context"
	"fmt"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/bench"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
)

// hostPingPong is a round trip on the controller's host, for racks with
// no board pair to ping between. It is bench's ping-pong, run by the
// steps (moved out of rig, which opens racks and runs flows on boards:
// this runs on no board).
type hostPingPong struct {
	// Transport and Send are the path measured (shm copy or loan, udp,
	// intra).
	Transport fixtures.Transport
	Send      agentproto.SendPath
	// Reliable selects the Reliable QoS.
	Reliable bool
	// Payload in bytes; RoundTrips timed after Warmup untimed ones.
	Payload, RoundTrips, Warmup int
	// NetNS runs a udp ping-pong in two network namespaces joined by a
	// veth pair (root).
	NetNS bool
}

// run runs `hilrig bench` ping-pong (futex wait) between the controller
// and a child process of bin (the rig's hilrig binary, rig.Binary) on the
// controller's host: the same middleware, but not on the rack's boards.
// It returns the one-way (RTT/2) percentiles, Jitter = p99 − p50
// (CLOCK_MONOTONIC of the controller host). Blocks.
func (spec hostPingPong) run(ctx context.Context, bin string) (report.Summary, error) {
	cfg := bench.PingPongConfig{Wait: kind.WaitFutex, Sizes: []int{spec.Payload}, RoundTrips: spec.RoundTrips, Warmup: spec.Warmup,
		Reliable: spec.Reliable, NetNS: spec.NetNS, Launcher: bench.Launcher{Exe: bin, Args: []string{"bench"}}}
	switch spec.Transport {
	case fixtures.Intra:
		cfg.Transport = bench.TIntra
	case fixtures.Shm:
		cfg.Transport = bench.TShm
		if spec.Send == agentproto.SendLoan {
			cfg.Path = "loan"
		}
	case fixtures.UDP:
		cfg.Transport = bench.TUDP
	default:
		return report.Summary{}, fmt.Errorf("steps: host ping-pong transport %q: want shm, udp or intra", spec.Transport)
	}
	rep, err := bench.PingPong(ctx, cfg)
	if err != nil {
		return report.Summary{}, err
	}
	if len(rep.Results) == 0 {
		return report.Summary{}, fmt.Errorf("steps: host ping-pong %s returned no result", spec.Transport)
	}
	h := rep.Results[0].OneWay // every percentile of RTT halved
	return report.Summary{Count: h.Count, Min: h.Min, P50: h.P50, P90: h.P90, P99: h.P99, P999: h.P999,
		Max: h.Max, Jitter: h.P99 - h.P50}, nil
}
