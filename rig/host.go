package rig

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/bench"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// UDPConfig is the middleware's UDP options (batching, NACK and heartbeat
// periods, socket buffers, MTU), as Traffic.UDP takes them: suites
// configure a flow through the rig without importing the middleware.
type UDPConfig = middleware.UDPConfig

var clockReadNs atomic.Int64

// ClockReadNs is the p99 of the interval between two back-to-back reads
// of the middleware's CLOCK_MONOTONIC stamp clock on the controller's host
// (measured once, then cached; safe for concurrent use): the error a
// one-way sample between two boards sharing the controller's kernel can
// carry from the stamps themselves. Does not block beyond ~1 ms.
func ClockReadNs() int64 {
	if v := clockReadNs.Load(); v > 0 {
		return v
	}
	h := report.NewHistogram()
	for range 20000 {
		a := middleware.MonoNow()
		h.Record(middleware.MonoNow() - a)
	}
	v := max(h.ValueAtQuantile(99), 1)
	clockReadNs.Store(v)
	return v
}

// HostPingPongSpec is a round trip on the controller's host, for racks
// with no board pair to ping between.
type HostPingPongSpec struct {
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

// HostPingPong runs `hilrig bench` ping-pong (futex wait) between the
// controller and a child process of the rig's binary on the controller's
// host: the same middleware, but not on the rack's boards. It returns the
// one-way (RTT/2) percentiles, Jitter = p99 − p50 (CLOCK_MONOTONIC of the
// controller host). Blocks.
func (r *Rig) HostPingPong(ctx context.Context, spec HostPingPongSpec) (report.Summary, error) {
	bin, err := r.localBinary(ctx)
	if err != nil {
		return report.Summary{}, err
	}
	cfg := bench.PingPongConfig{Wait: middleware.WaitFutex, Sizes: []int{spec.Payload}, RoundTrips: spec.RoundTrips, Warmup: spec.Warmup,
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
		return report.Summary{}, fmt.Errorf("rig: host ping-pong transport %q: want shm, udp or intra", spec.Transport)
	}
	rep, err := bench.PingPong(ctx, cfg)
	if err != nil {
		return report.Summary{}, err
	}
	if len(rep.Results) == 0 {
		return report.Summary{}, fmt.Errorf("rig: host ping-pong %s returned no result", spec.Transport)
	}
	h := rep.Results[0].OneWay // every percentile of RTT halved
	return report.Summary{Count: h.Count, Min: h.Min, P50: h.P50, P90: h.P90, P99: h.P99, P999: h.P999,
		Max: h.Max, Jitter: h.P99 - h.P50}, nil
}
