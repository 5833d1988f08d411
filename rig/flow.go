package rig

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// FlowSpec wires one publisher to one or more subscribers.
type FlowSpec struct {
	// Name prefixes endpoint ids and the topic; default "flow<n>".
	Name string
	// Link is a rack link: the publisher runs on its A board, the
	// subscriber on its B board, over its transport. Alternatively give
	// From/To/Transport.
	Link string
	// From is the publisher's board; To the subscribers' boards.
	From string
	To   []string
	// Transport is "shm", "udp" or "intra" (default: the link's; "shm"
	// without a link). "intra" runs the publisher and every subscriber in
	// the one agent of From (every To must be From) over the middleware's
	// intra-process path.
	Transport string
	// UDP holds extra UDP options for a udp flow (batching BatchBytes and
	// BatchDelay, NACK and heartbeat periods, socket buffers, MTU, ...),
	// applied to every endpoint. Listen and Peers must be empty: the rig
	// sets them from the link's addresses and its own port allocation.
	UDP *middleware.UDPConfig
	// BestEffort makes the topic best effort; default Reliable (the
	// publisher waits for slow subscribers; loss is a failure).
	BestEffort bool
	// Depth of the topic (ring history / retransmit window); default 64.
	Depth int
	// Payload is the payload size in bytes (≥ 8).
	Payload int
	// RateHz is the publish rate; 0 means as fast as possible.
	RateHz float64
	// Count is the number of messages (including WarmUp).
	Count uint64
	// Duration bounds the run instead of (or besides) Count.
	Duration time.Duration
	// WarmUp messages are sent but not recorded in latency.
	WarmUp uint64
	// Send is copy (default) or loan; Wait is futex (default), spin, hybrid.
	Send agentproto.SendPath
	Wait string
	// Markers toggles each board's "tx" marker on send and "rx" marker on
	// receive, when the board has them.
	Markers bool
	// Latency is "mono" (default for same-host boards) or "clock".
	Latency string
	// Window is the summary window; default 1 s.
	Window time.Duration
	// Drain is how long subscribers may take after the publisher's last
	// message before they are stopped (their missing messages are lost).
	// Default 10 s.
	Drain time.Duration
}

// Flow is a running publisher→subscribers wiring.
type Flow struct {
	Spec        FlowSpec
	Publisher   *Endpoint
	Subscribers []*Endpoint
	// Transport is the resolved transport ("shm", "udp").
	Transport string
}

// FlowResult is what a flow measured.
type FlowResult struct {
	Publisher   *agentproto.Final
	Subscribers []*agentproto.Final
	// Windows of every subscriber, in arrival order per subscriber.
	Windows [][]agentproto.Window
}

// Flow starts subscribers (waiting until each is attached), then the
// publisher. Blocks until all have acknowledged.
func (r *Rig) Flow(ctx context.Context, spec FlowSpec) (*Flow, error) {
	if spec.Link != "" {
		l, err := r.Rack.Link(spec.Link)
		if err != nil {
			return nil, err
		}
		if spec.From == "" {
			spec.From = l.A
		}
		if len(spec.To) == 0 {
			spec.To = []string{l.B}
		}
		if spec.Transport == "" {
			spec.Transport = l.Transport
		}
	}
	if spec.Transport == "" {
		spec.Transport = "shm"
	}
	if spec.From == "" || len(spec.To) == 0 {
		return nil, fmt.Errorf("rig: flow needs a link or From and To boards")
	}
	if spec.Name == "" {
		spec.Name = "flow" + strconv.Itoa(int(r.flowSeq.Add(1)))
	}
	if spec.Depth == 0 {
		spec.Depth = 64
	}
	rel := middleware.Reliable
	if spec.BestEffort {
		rel = middleware.BestEffort
	}
	c := middleware.Contract{Topic: "hilrig/" + r.Domain + "/" + spec.Name, MaxPayload: max(spec.Payload, 8),
		Reliability: rel, Depth: spec.Depth}
	type subAddr struct{ listen netip.AddrPort }
	subs := make([]subAddr, len(spec.To))
	if spec.UDP != nil {
		if spec.Transport != "udp" {
			return nil, fmt.Errorf("rig: flow %s: UDP options on a %s flow", spec.Name, spec.Transport)
		}
		if spec.UDP.Listen != "" || len(spec.UDP.Peers) > 0 {
			return nil, fmt.Errorf("rig: flow %s: UDP.Listen and UDP.Peers are set by the rig; leave them empty", spec.Name)
		}
	}
	switch spec.Transport {
	case "shm":
		c.Transport = middleware.TransportShm
	case "intra":
		c.Transport = middleware.TransportIntra
		for _, to := range spec.To {
			if to != spec.From {
				return nil, fmt.Errorf("rig: flow %s: intra-process flow from %s to %s: every subscriber must be on the publisher's board", spec.Name, spec.From, to)
			}
		}
	case "udp":
		c.Transport = middleware.TransportUDP
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
	default:
		return nil, fmt.Errorf("rig: flow transport %q: want shm, udp or intra", spec.Transport)
	}
	base := agentproto.Start{
		Domain: r.Domain, Contract: c, Payload: spec.Payload, RateHz: spec.RateHz, Count: spec.Count,
		DurationNs: int64(spec.Duration), WarmUp: spec.WarmUp, Send: spec.Send, Wait: spec.Wait,
		Latency: spec.Latency, WindowNs: int64(spec.Window),
	}
	f := &Flow{Spec: spec, Transport: spec.Transport}
	ok := false
	defer func() {
		if !ok { // a half-started flow leaves nothing running
			for _, ep := range f.Subscribers {
				_ = ep.Stop()
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
		s.Payload = 0
		if spec.Transport == "udp" {
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
	s := base
	s.Role, s.Endpoint = agentproto.Publisher, spec.Name+"-pub"
	s.Marker = r.marker(a.Board, "tx", spec.Markers)
	s.CPU, s.Priority = boardCPU(a.Board, 0), a.Board.Priority
	if f.Publisher, err = a.Start(ctx, s); err != nil {
		return nil, fmt.Errorf("rig: flow %s: publisher on %s: %w", spec.Name, spec.From, err)
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
	res := &FlowResult{}
	pf, err := f.Publisher.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("rig: flow %s: publisher: %w", f.Spec.Name, err)
	}
	res.Publisher = pf
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
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("rig: flow %s: %w", f.Spec.Name, err)
	}
	return res, nil
}

// Case turns the result into a report case: sent by the publisher,
// delivered and lost summed over subscribers, latency histograms merged.
// The caller sets Bounds and calls Finalize/Judge.
func (res *FlowResult) Case(suite, name string, spec FlowSpec) *report.Case {
	c := &report.Case{Suite: suite, Name: name, Transport: spec.Transport, PayloadBytes: int64(spec.Payload),
		RateHz: spec.RateHz, Subscribers: len(res.Subscribers), Histogram: report.NewHistogram()}
	if spec.Transport == "shm" && spec.Send == agentproto.SendLoan {
		c.Transport = "shm-loan"
	}
	c.Reliability = "reliable"
	if spec.BestEffort {
		c.Reliability = "best-effort"
	}
	if res.Publisher != nil {
		c.Sent = int64(res.Publisher.Sent)
		c.CPUPercent += cpuPercent(res.Publisher)
		c.RSSBytes = res.Publisher.MaxRSSBytes
	}
	for _, s := range res.Subscribers {
		c.Delivered += int64(s.Received)
		c.Lost += int64(s.Lost)
		if s.Latency != nil {
			c.Histogram.Merge(s.Latency)
		}
		c.CPUPercent += cpuPercent(s)
		c.RSSBytes = max(c.RSSBytes, s.MaxRSSBytes)
		if d := time.Duration(s.DurationNs); d > c.Duration {
			c.Duration = d
		}
		if s.Reason == agentproto.EndError {
			c.Failure = s.Error
		}
	}
	if c.Duration > 0 {
		c.MsgsPerSec = float64(c.Delivered) / c.Duration.Seconds()
		c.ThroughputMBps = float64(c.Delivered) * float64(spec.Payload) / c.Duration.Seconds() / 1e6
	}
	return c
}

func cpuPercent(f *agentproto.Final) float64 {
	if f.DurationNs <= 0 {
		return 0
	}
	return 100 * float64(f.CPUUserNs+f.CPUSysNs) / float64(f.DurationNs)
}
