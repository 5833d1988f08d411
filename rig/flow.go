package rig

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// Traffic is what a flow (FlowSpec) and a round trip (EchoSpec) share:
// where the traffic runs, its topic's QoS, its pacing and its summaries.
type Traffic struct {
	// Name prefixes endpoint ids and topics; default "flow<n>" / "echo<n>".
	Name string
	// Link is a rack link: the sender (publisher, pinger) runs on its A
	// board, the receiver(s) on its B board, over its transport.
	// Alternatively give From, the receivers' board(s) and Transport.
	Link string
	// From is the sender's board.
	From string
	// Transport is shm, udp or intra (default: the link's; shm without a
	// link). Intra runs every end in the one agent of From (every receiver
	// must be on From) over the middleware's intra-process path.
	Transport fixtures.Transport
	// UDP holds extra UDP options for a udp transport (batching BatchBytes
	// and BatchDelay, NACK and heartbeat periods, socket buffers, MTU,
	// ...), applied to every endpoint. Listen and Peers must be empty: the
	// rig sets them from the link's addresses and its own port allocation.
	UDP *middleware.UDPConfig
	// BestEffort makes the topic(s) best effort; default Reliable (the
	// sender waits for slow receivers; loss is a failure).
	BestEffort bool
	// Depth of the topic(s) (ring history / retransmit window); default 64.
	Depth int
	// Payload is the payload size in bytes (a flow ≥ 8, a round trip
	// ≥ agentproto.PingHeaderBytes).
	Payload int
	// RateHz is the send rate; 0 means as fast as possible (a round trip:
	// back to back with one ping in flight).
	RateHz float64
	// Count is the number of messages (including WarmUp).
	Count uint64
	// Duration bounds the run instead of (or besides) Count.
	Duration time.Duration
	// WarmUp messages are sent but not recorded in latency.
	WarmUp uint64
	// Send is the sender's path: copy (default) or loan (a round trip's
	// echo always replies on the copy path).
	Send agentproto.SendPath
	// Wait is the receivers' wait strategy: futex (default, the zero
	// value), spin, hybrid.
	Wait middleware.WaitStrategy
	// Markers toggles the sender board's "tx" marker on every send and
	// the receiver board's "rx" marker on every receipt, when they exist.
	Markers bool
	// Window is the summary window; default 1 s.
	Window time.Duration
	// Middleware is the bus: "" or "hilrig", or a peer the boards' agent
	// (hilrig-peer) was built with (docs/peers.md).
	Middleware string
	// ColdPeer gives every endpoint of a peer traffic a participant of its
	// own (agentproto.Start.ColdPeer): discovery from cold.
	ColdPeer bool
	// Schedule, when set, replaces the publisher's Payload and RateHz
	// with a plan per message (agentproto.Schedule: a recording
	// replayed); Payload must be its largest size.
	Schedule *agentproto.Schedule
	// Stamps asks every subscriber for its messages' stamps, at most
	// this many per window (agentproto.Start.Stamps; 0: none): in the
	// windows of the FlowResult.
	Stamps int
	// Trace, when set, arms a kernel trace on every endpoint of the
	// traffic (agentproto.TraceSpec): breaching windows come back with
	// their snapshots, and FlowResult.Case links the worst one.
	Trace *agentproto.TraceSpec
	// HugePages asks the endpoints' nodes for huge-page slot arrays
	// (agentproto.Start.HugePages); the case's counters say what they got.
	HugePages bool
	// Stages asks shared-memory endpoints for the stage split of every
	// message (agentproto.Start.Stages); FlowResult.Case joins it.
	Stages bool
	// ROS2 makes a flow on a DDS peer a ROS 2 topic (agentproto.Start.ROS2):
	// its profile sets the reliability and depth (BestEffort and Depth are
	// ignored) and Payload is the message's size (rostopic.Template).
	ROS2 *rostopic.Topic
}

// CaseTransport names t's transport in report cases: shm sent on loan is
// "shm-loan", every other the transport's name.
func (t Traffic) CaseTransport() string {
	if t.Transport == fixtures.Shm && t.Send == agentproto.SendLoan {
		return "shm-loan"
	}
	return string(t.Transport)
}

// RouteOf is the route of traffic over transport t from board from to the
// boards to: whether every end shares from's kernel
// (fixtures.Rack.SameKernel) and the transport class that follows (UDP
// within one kernel is one host's, across kernels between boards). The
// rig decides it once, when it starts the traffic; report cases carry it.
func RouteOf(rack *fixtures.Rack, t fixtures.Transport, from string, to ...string) report.Route {
	rt := report.Route{From: from, To: strings.Join(to, ","), SameKernel: true}
	for _, b := range to {
		rt.SameKernel = rt.SameKernel && rack.SameKernel(from, b)
	}
	switch t {
	case fixtures.Intra:
		rt.Class = kind.ClassInProcess
	case fixtures.Shm:
		rt.Class = kind.ClassSharedMemory
	case fixtures.UDP:
		rt.Class = kind.ClassUDPBoards
		if rt.SameKernel {
			rt.Class = kind.ClassUDPOneHost
		}
	}
	return rt
}

// resolve fills t's defaults from its link and names it (prefix + a
// sequence number when unnamed); what ("flow", "round trip") goes into
// errors. It returns the link (nil without one) and the middleware
// transport of t's contracts.
func (r *Rig) resolve(t *Traffic, prefix, what string) (*fixtures.Link, middleware.Transport, error) {
	var link *fixtures.Link
	if t.Link != "" {
		l, err := r.Rack.Link(t.Link)
		if err != nil {
			return nil, 0, err
		}
		link = l
		if t.From == "" {
			t.From = l.A
		}
		if t.Transport == "" {
			t.Transport = l.Transport
		}
	}
	if t.Transport == "" {
		t.Transport = fixtures.Shm
	}
	if t.Name == "" {
		t.Name = prefix + strconv.Itoa(int(r.flowSeq.Add(1)))
	}
	if t.Depth == 0 {
		t.Depth = 64
	}
	if t.UDP != nil {
		if t.Transport != fixtures.UDP {
			return nil, 0, fmt.Errorf("rig: %s %s: UDP options on a %s %s", what, t.Name, t.Transport, what)
		}
		if t.UDP.Listen != "" || len(t.UDP.Peers) > 0 {
			return nil, 0, fmt.Errorf("rig: %s %s: UDP.Listen and UDP.Peers are set by the rig; leave them empty", what, t.Name)
		}
	}
	switch t.Transport {
	case fixtures.Shm:
		return link, middleware.TransportShm, nil
	case fixtures.Intra:
		return link, middleware.TransportIntra, nil
	case fixtures.UDP:
		return link, middleware.TransportUDP, nil
	}
	return nil, 0, fmt.Errorf("rig: %s transport %q: want shm, udp or intra", what, t.Transport)
}

// reliability is t's topic reliability.
func (t Traffic) reliability() middleware.Reliability {
	if t.BestEffort {
		return middleware.BestEffort
	}
	return middleware.Reliable
}

// FlowSpec describes a publisher → subscribers flow.
type FlowSpec struct {
	Traffic
	// To are the subscribers' boards (one subscriber each; default the
	// link's B board).
	To []string
	// Latency is the clocks subscribers compute latency on: LatencyMono
	// (the default, for boards sharing a kernel) or LatencyStamp.
	Latency agentproto.LatencyClock
	// Drain is how long subscribers may take after the publisher's last
	// message before they are stopped (their missing messages are lost).
	// Default 10 s.
	Drain time.Duration
	// Bridge, when set, puts a `hilrig bridge` process between the
	// publisher and the subscriber (BridgeSpec): one end on hilrig's bus,
	// the other a ROS 2 node on Middleware.
	Bridge *BridgeSpec
}

// Flow is a running publisher→subscribers wiring.
type Flow struct {
	Spec        FlowSpec
	Publisher   *Endpoint
	Subscribers []*Endpoint
	// Transport is the resolved transport.
	Transport fixtures.Transport
	// Route is where the flow runs (RouteOf), decided when it started.
	Route report.Route

	bridge *bridgeProc // a bridged flow's bridge (FlowSpec.Bridge)
}

// FlowResult is what a flow measured.
type FlowResult struct {
	// Route is the flow's route (Flow.Route); Case puts it in the case.
	Route report.Route
	// Bridge is what the bridge process of a bridged flow used (nil
	// without one, or when it could not be read: the error says so).
	Bridge      *BridgeUsage
	Publisher   *agentproto.Final
	Subscribers []*agentproto.Final
	// Windows of every subscriber, in arrival order per subscriber.
	Windows [][]agentproto.Window

	// pins are the flow's endpoints pinned to a CPU, with their boards'
	// tuning, for the IRQ-affinity findings (explain.go).
	pins []pinned
}

// Flow starts subscribers (waiting until each is attached), then the
// publisher. Blocks until all have acknowledged.
func (r *Rig) Flow(ctx context.Context, spec FlowSpec) (*Flow, error) {
	link, mt, err := r.resolve(&spec.Traffic, "flow", "flow")
	if err != nil {
		return nil, err
	}
	if link != nil && len(spec.To) == 0 {
		spec.To = []string{link.B}
	}
	if spec.From == "" || len(spec.To) == 0 {
		return nil, fmt.Errorf("rig: flow needs a link or From and To boards")
	}
	pubMW, subMW := spec.Middleware, spec.Middleware
	if spec.Bridge != nil {
		if err := checkBridge(spec); err != nil {
			return nil, fmt.Errorf("rig: flow %s: %w", spec.Name, err)
		}
		// hilrig's end of the bridge is hilrig's middleware.
		if spec.Bridge.Direction == bridgeconf.ToROS {
			pubMW = MiddlewareHilrig
		} else {
			subMW = MiddlewareHilrig
		}
	}
	c := middleware.Contract{Topic: "hilrig/" + r.Domain + "/" + spec.Name, MaxPayload: max(spec.Payload, 8),
		Reliability: spec.reliability(), Depth: spec.Depth, Transport: mt}
	if t := spec.ROS2; t != nil {
		c.Reliability, c.Depth = middleware.BestEffort, t.Profile.Depth()
		if t.Profile.Reliable() {
			c.Reliability = middleware.Reliable
		}
	}
	type subAddr struct{ listen netip.AddrPort }
	subs := make([]subAddr, len(spec.To))
	switch spec.Transport {
	case fixtures.Intra:
		for _, to := range spec.To {
			if to != spec.From {
				return nil, fmt.Errorf("rig: flow %s: intra-process flow from %s to %s: every subscriber must be on the publisher's board", spec.Name, spec.From, to)
			}
		}
	case fixtures.UDP:
		if spec.UDP != nil {
			c.UDP = *spec.UDP
		}
		for i, to := range spec.To {
			addr, err := r.boardAddr(spec.Link, to)
			if err != nil {
				return nil, err
			}
			subs[i].listen = netip.AddrPortFrom(addr, uint16(r.nextPort()))
			c.UDP.Peers = append(c.UDP.Peers, subs[i].listen.String())
		}
	}
	nets := map[string]*agentproto.PeerNet{} // a bridge's DDS: loopback on its board
	if spec.Bridge == nil {
		if nets, err = r.peerNets(spec.Traffic, spec.From, spec.To); err != nil {
			return nil, fmt.Errorf("rig: flow %s: %w", spec.Name, err)
		}
	}
	base := agentproto.Start{
		Domain: r.Domain, Contract: c, Payload: spec.Payload, RateHz: spec.RateHz, Count: spec.Count,
		DurationNs: int64(spec.Duration), WarmUp: spec.WarmUp, Send: spec.Send, Wait: spec.Wait,
		Latency: spec.Latency, WindowNs: int64(spec.Window), Middleware: spec.Middleware, Trace: spec.Trace,
		HugePages: spec.HugePages, Stages: spec.Stages, ColdPeer: spec.ColdPeer, ROS2: spec.ROS2,
	}
	f := &Flow{Spec: spec, Transport: spec.Transport, Route: RouteOf(r.Rack, spec.Transport, spec.From, spec.To...)}
	ok := false
	defer func() {
		if !ok { // a half-started flow leaves nothing running
			for _, ep := range f.Subscribers {
				_ = ep.Stop()
			}
			if f.bridge != nil {
				_ = f.bridge.stop()
			}
		}
	}()
	for i, to := range spec.To {
		a, err := r.Agent(ctx, to)
		if err != nil {
			return nil, err
		}
		s := base
		s.Role, s.Endpoint = agentproto.Subscriber, fmt.Sprintf("%s-sub%d", spec.Name, i)
		s.Stamps = spec.Stamps
		s.PeerNet = nets[to]
		s.Middleware = subMW
		s.Payload = 0
		if spec.Transport == fixtures.UDP {
			s.Contract.UDP = middleware.UDPConfig{}
			if spec.UDP != nil {
				s.Contract.UDP = *spec.UDP
			}
			s.Contract.UDP.Listen = subs[i].listen.String()
		}
		s.Marker = r.marker(a.Board, "rx", spec.Markers)
		s.CPU, s.Priority = boardCPU(a.Board, 1), a.Board.Priority
		ep, err := a.Start(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("rig: flow %s: subscriber on %s: %w", spec.Name, to, err)
		}
		f.Subscribers = append(f.Subscribers, ep)
	}
	a, err := r.Agent(ctx, spec.From)
	if err != nil {
		return nil, err
	}
	if spec.Bridge != nil {
		board := spec.To[0]
		if spec.Bridge.Direction == bridgeconf.FromROS {
			board = spec.From
		}
		if f.bridge, err = r.startBridge(ctx, board, spec, bridgeHilrig(spec, c, subs[0].listen)); err != nil {
			return nil, fmt.Errorf("rig: flow %s: %w", spec.Name, err)
		}
	}
	s := base
	s.Role, s.Endpoint = agentproto.Publisher, spec.Name+"-pub"
	s.Schedule = spec.Schedule
	s.PeerNet = nets[spec.From]
	s.Middleware = pubMW
	s.Marker = r.marker(a.Board, "tx", spec.Markers)
	s.CPU, s.Priority = boardCPU(a.Board, 0), a.Board.Priority
	if f.Publisher, err = a.Start(ctx, s); err != nil {
		return nil, fmt.Errorf("rig: flow %s: publisher on %s: %w", spec.Name, spec.From, err)
	}
	if f.bridge != nil {
		// The publisher's start returned after its discovery wait: from
		// here the bridge forwards traffic.
		if err := f.bridge.mark(); err != nil {
			_ = f.Publisher.Stop()
			return nil, fmt.Errorf("rig: flow %s: %w", spec.Name, err)
		}
	}
	ok = true
	return f, nil
}

func boardCPU(b *fixtures.Board, i int) *int {
	if len(b.CPUs) == 0 {
		return nil
	}
	c := b.CPUs[i%len(b.CPUs)]
	return &c
}

func (r *Rig) marker(b *fixtures.Board, name string, on bool) *agentproto.Marker {
	if !on {
		return nil
	}
	l, ok := b.Marker(name)
	if !ok {
		return nil
	}
	return &agentproto.Marker{Chip: r.Chip(l.Chip), Line: l.Ref(), ActiveLow: l.ActiveLow}
}

// boardAddr is board's address on link (or loopback for a local board
// without a link).
func (r *Rig) boardAddr(link, board string) (netip.Addr, error) {
	if link == "" {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	a, b, err := r.LinkAddrs(link)
	if err != nil {
		return netip.Addr{}, err
	}
	l, _ := r.Rack.Link(link)
	if board == l.A {
		return a, nil
	}
	return b, nil
}

// Wait waits for the publisher's final, then for every subscriber's final
// (stopping subscribers still waiting after Drain), then stops the
// publisher. Blocks; ctx bounds everything.
func (f *Flow) Wait(ctx context.Context) (*FlowResult, error) {
	res := &FlowResult{pins: f.pins(), Route: f.Route}
	pf, err := f.Publisher.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("rig: flow %s: publisher: %w", f.Spec.Name, err)
	}
	res.Publisher = pf
	var bridgeErr error
	if f.bridge != nil {
		// Read as the publisher ends: the bridge's CPU while it forwarded
		// the traffic, not its idle wait for the subscribers' drain.
		u, err := f.bridge.usage()
		if bridgeErr = err; err == nil {
			res.Bridge = &u
		}
	}
	drain := f.Spec.Drain
	if drain == 0 {
		drain = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	var errs []error
	for _, s := range f.Subscribers {
		sf, err := s.Wait(dctx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			_ = s.Stop()
			sf, err = s.Wait(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("subscriber %s: %w", s.Spec.Endpoint, err))
			continue
		}
		res.Subscribers = append(res.Subscribers, sf)
		res.Windows = append(res.Windows, s.Windows())
	}
	_ = f.Publisher.Stop() // it lingers after its final; release it now
	if f.bridge != nil {
		if res.Bridge != nil {
			res.Bridge.Health = f.bridge.freshHealth(ctx, 10*bridgeHealth)
		}
		errs = append(errs, bridgeErr, f.bridge.stop())
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("rig: flow %s: %w", f.Spec.Name, err)
	}
	return res, nil
}

// Case turns the result into a report case: sent by the publisher,
// delivered and lost summed over subscribers, latency histograms merged.
// The caller sets Bounds and calls Finalize/Judge.
func (res *FlowResult) Case(suite, name string, spec FlowSpec) *report.Case {
	m := report.Results{Histogram: report.NewHistogram()}
	if res.Publisher != nil {
		m.Sent = int64(res.Publisher.Sent)
		m.CPUPercent += cpuPercent(res.Publisher)
		m.RSSBytes = res.Publisher.MaxRSSBytes
	}
	for _, s := range res.Subscribers {
		m.Delivered += int64(s.Received)
		m.Lost += int64(s.Lost)
		if s.Latency != nil {
			m.Histogram.Merge(s.Latency)
		}
		m.CPUPercent += cpuPercent(s)
		m.RSSBytes = max(m.RSSBytes, s.MaxRSSBytes)
		if d := time.Duration(s.DurationNs); d > m.Duration {
			m.Duration = d
		}
		if s.Reason == agentproto.EndError {
			m.Failure = s.Error
		}
	}
	c := report.NewCase(res.route(), report.CaseSpec{Suite: suite, Name: name, Transport: spec.CaseTransport(),
		PayloadBytes: int64(spec.Payload), RateHz: spec.RateHz, Reliability: kind.ReliabilityOf(!spec.BestEffort),
		Subscribers: len(res.Subscribers)}, m)
	res.explain(c, spec)
	if c.Duration > 0 {
		c.MsgsPerSec = float64(c.Delivered) / c.Duration.Seconds()
		c.ThroughputMBps = float64(c.Delivered) * float64(spec.Payload) / c.Duration.Seconds() / 1e6
	}
	return c
}

// route is the flow's route for its case; nil when unknown (a result
// built by hand).
func (res *FlowResult) route() *report.Route {
	if res.Route.Class == "" {
		return nil
	}
	return &res.Route
}

func cpuPercent(f *agentproto.Final) float64 {
	if f.DurationNs <= 0 {
		return 0
	}
	return 100 * float64(f.CPUUserNs+f.CPUSysNs) / float64(f.DurationNs)
}
