package steps

import (
	"context"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
)

// RoundTrip measures the round trip of path (Intra, ShmCopy, ShmLoan,
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
func RoundTrip(ctx context.Context, env *Env, name string, path Path, reliable bool, payload, n int) (*report.Case, error) {
	warm := min(n/10, 200)
	if path.Transport != fixtures.Intra && len(env.Rack.Boards) < 2 && path.Middleware == "" {
		spec := hostPingPong{Transport: path.Transport, Send: path.Send, Reliable: reliable, Payload: payload,
			RoundTrips: n, Warmup: warm, NetNS: path.Transport == fixtures.UDP && env.Rack.Claims(fixtures.CapMultiHost)}
		bin, err := env.Rig.Binary(ctx)
		if err != nil {
			return nil, err
		}
		s, err := spec.run(ctx, bin)
		if err != nil {
			return nil, err
		}
		return hostRTTCase(env, name, path, reliable, payload, spec, s), nil
	}
	from, to, link, err := Route(env.Rack, path)
	if err != nil {
		return nil, err
	}
	spec := rig.EchoSpec{Traffic: rig.Traffic{From: from, Link: link, Transport: path.Transport, Send: path.Send,
		BestEffort: !reliable, Payload: max(payload, agentproto.PingHeaderBytes), Count: uint64(n + warm),
		WarmUp: uint64(warm), Window: env.Config.Window, Middleware: path.Middleware}, To: to}
	f, err := env.Rig.Echo(ctx, spec)
	if err != nil {
		return nil, err
	}
	res, werr := f.Wait(ctx)
	if res == nil || res.Pinger == nil {
		return nil, werr
	}
	return rttCase(env, name, path, reliable, payload, warm, f, res, werr), nil
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
