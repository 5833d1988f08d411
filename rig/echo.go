package rig

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// EchoSpec wires a pinger on one board to an echo on another: the round
// trip measured on the pinger board's own CLOCK_MONOTONIC (no clock
// sync), see agentproto.Pinger.
type EchoSpec struct {
	Traffic
	// To is the echo's board (default the link's B board; From for intra).
	To string
	// ReplyTimeout bounds a back-to-back pinger's wait for one reply
	// (default agentproto.DefaultReplyTimeoutNs).
	ReplyTimeout time.Duration
}

// Echo is a running pinger → echo → pinger round trip.
type Echo struct {
	Spec   EchoSpec
	Pinger *Endpoint
	Echo   *Endpoint
	// Transport is the resolved transport.
	Transport fixtures.Transport
	// Route is where the round trip runs (RouteOf): pinger to echo.
	Route report.Route
}

// EchoResult is what a round trip measured.
type EchoResult struct {
	// Route is the round trip's route (Echo.Route); Case puts it in the
	// case.
	Route  report.Route
	Pinger *agentproto.Final
	Echo   *agentproto.Final
	// Windows are the pinger's windows (RTT histograms), in arrival order.
	Windows []agentproto.Window
}

// Echo starts the echo (its subscriber attached, its reply publisher
// open), then the pinger, which starts pinging at once. Blocks until both
// have acknowledged; on error nothing is left running.
func (r *Rig) Echo(ctx context.Context, spec EchoSpec) (*Echo, error) {
	link, mt, err := r.resolve(&spec.Traffic, "echo", "round trip")
	if err != nil {
		return nil, err
	}
	if link != nil && spec.To == "" {
		spec.To = link.B
	}
	if spec.Transport == fixtures.Intra && spec.To == "" {
		spec.To = spec.From
	}
	if spec.From == "" || spec.To == "" {
		return nil, fmt.Errorf("rig: round trip needs a link or From and To boards")
	}
	if spec.Payload < agentproto.PingHeaderBytes {
		return nil, fmt.Errorf("rig: round trip %s: payload %d B, want ≥ %d", spec.Name, spec.Payload, agentproto.PingHeaderBytes)
	}
	topic := "hilrig/" + r.Domain + "/" + spec.Name
	ping := middleware.Contract{Topic: topic + "/ping", MaxPayload: spec.Payload, Reliability: spec.reliability(), Depth: spec.Depth, Transport: mt}
	reply := ping
	reply.Topic = topic + "/reply"
	// Contracts as each end sees them: UDP ends differ in Listen/Peers.
	pingerPing, pingerReply, echoPing, echoReply := ping, reply, ping, reply
	switch spec.Transport {
	case fixtures.Intra:
		if spec.To != spec.From {
			return nil, fmt.Errorf("rig: round trip %s: intra-process between %s and %s: both ends must be on one board", spec.Name, spec.From, spec.To)
		}
	case fixtures.UDP:
		if spec.To == spec.From {
			return nil, fmt.Errorf("rig: round trip %s: udp from %s to itself: want two boards", spec.Name, spec.From)
		}
		pingerAddr, err := r.boardAddr(spec.Link, spec.From)
		if err != nil {
			return nil, err
		}
		echoAddr, err := r.boardAddr(spec.Link, spec.To)
		if err != nil {
			return nil, err
		}
		pingerListen := netip.AddrPortFrom(pingerAddr, uint16(r.nextPort())).String()
		echoListen := netip.AddrPortFrom(echoAddr, uint16(r.nextPort())).String()
		if spec.UDP != nil {
			for _, c := range []*middleware.Contract{&pingerPing, &pingerReply, &echoPing, &echoReply} {
				c.UDP = *spec.UDP
			}
		}
		pingerPing.UDP.Peers = []string{echoListen}
		echoPing.UDP.Listen = echoListen
		echoReply.UDP.Peers = []string{pingerListen}
		pingerReply.UDP.Listen = pingerListen
	}
	nets, err := r.peerNets(spec.Traffic, spec.From, []string{spec.To})
	if err != nil {
		return nil, fmt.Errorf("rig: round trip %s: %w", spec.Name, err)
	}
	base := agentproto.Start{Domain: r.Domain, Wait: spec.Wait, WindowNs: int64(spec.Window), Middleware: spec.Middleware}
	f := &Echo{Spec: spec, Transport: spec.Transport, Route: RouteOf(r.Rack, spec.Transport, spec.From, spec.To)}

	ea, err := r.Agent(ctx, spec.To)
	if err != nil {
		return nil, err
	}
	es := base
	es.Role, es.Endpoint, es.Contract = agentproto.Echo, spec.Name+"-echo", echoPing
	es.Echo = &agentproto.EchoSpec{Reply: echoReply}
	es.PeerNet = nets[spec.To]
	es.Marker = r.marker(ea.Board, "rx", spec.Markers)
	es.CPU, es.Priority = boardCPU(ea.Board, 1), ea.Board.Priority
	// Count 0: the echo runs until Wait stops it, after the pinger's last
	// reply (so a lost last ping cannot leave it waiting).
	if f.Echo, err = ea.Start(ctx, es); err != nil {
		return nil, fmt.Errorf("rig: round trip %s: echo on %s: %w", spec.Name, spec.To, err)
	}
	pa, err := r.Agent(ctx, spec.From)
	if err == nil {
		ps := base
		ps.Role, ps.Endpoint, ps.Contract = agentproto.Pinger, spec.Name+"-ping", pingerPing
		ps.PeerNet = nets[spec.From]
		ps.Echo = &agentproto.EchoSpec{Reply: pingerReply, ReplyTimeoutNs: int64(spec.ReplyTimeout)}
		ps.Payload, ps.RateHz, ps.Count, ps.DurationNs, ps.WarmUp, ps.Send =
			spec.Payload, spec.RateHz, spec.Count, int64(spec.Duration), spec.WarmUp, spec.Send
		ps.Marker = r.marker(pa.Board, "tx", spec.Markers)
		ps.CPU, ps.Priority = boardCPU(pa.Board, 0), pa.Board.Priority
		if f.Pinger, err = pa.Start(ctx, ps); err != nil {
			err = fmt.Errorf("rig: round trip %s: pinger on %s: %w", spec.Name, spec.From, err)
		}
	}
	if err != nil {
		_ = f.Echo.Stop() // a half-started round trip leaves nothing running
		return nil, err
	}
	return f, nil
}

// Wait waits for the pinger's final (it ends after its last reply or
// reply timeout), then stops the echo and waits for its final. Blocks;
// ctx bounds everything.
func (f *Echo) Wait(ctx context.Context) (*EchoResult, error) {
	res := &EchoResult{Route: f.Route}
	pf, perr := f.Pinger.Wait(ctx)
	_ = f.Echo.Stop()
	ef, eerr := f.Echo.Wait(ctx)
	res.Pinger, res.Echo, res.Windows = pf, ef, f.Pinger.Windows()
	var errs []error
	if perr != nil {
		errs = append(errs, fmt.Errorf("pinger: %w", perr))
	}
	if eerr != nil {
		errs = append(errs, fmt.Errorf("echo: %w", eerr))
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("rig: round trip %s: %w", f.Spec.Name, err)
	}
	return res, nil
}

// Case turns the result into a report case of the full round trip:
// pings sent, replies delivered, pings lost (by sequence number at the
// pinger), the RTT histogram. The caller sets Method, Bounds, and calls
// Finalize (suites halve it for an RTT/2 case).
func (res *EchoResult) Case(suite, name string, spec EchoSpec) *report.Case {
	m := report.Results{Histogram: report.NewHistogram()}
	if p := res.Pinger; p != nil {
		m.Sent, m.Delivered, m.Lost = int64(p.Sent), int64(p.Received), int64(p.Lost)
		if p.Latency != nil {
			m.Histogram.Merge(p.Latency)
		}
		m.CPUPercent += cpuPercent(p)
		m.RSSBytes = p.MaxRSSBytes
		m.Duration = time.Duration(p.DurationNs)
		if p.Reason == agentproto.EndError {
			m.Failure = "pinger: " + p.Error
		}
	}
	if e := res.Echo; e != nil {
		m.CPUPercent += cpuPercent(e)
		m.RSSBytes = max(m.RSSBytes, e.MaxRSSBytes)
		if e.Reason == agentproto.EndError && m.Failure == "" {
			m.Failure = "echo: " + e.Error
		}
	}
	var rt *report.Route
	if res.Route.Class != "" {
		rt = &res.Route
	}
	c := report.NewCase(rt, report.CaseSpec{Suite: suite, Name: name, Transport: spec.CaseTransport(), PayloadBytes: int64(spec.Payload),
		RateHz: spec.RateHz, Subscribers: 1, Reliability: kind.ReliabilityOf(!spec.BestEffort)}, m)
	if c.Duration > 0 {
		c.MsgsPerSec = float64(c.Delivered) / c.Duration.Seconds()
	}
	return c
}
