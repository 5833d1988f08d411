package rig

import (
	"fmt"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
)

// explain copies what the endpoints reported about their tails into the
// case: the endpoints' counters, the shared-memory stage split (the
// publisher's and subscribers' stamps joined by sequence number), and the
// trace snapshot of the worst late window (of the breaching windows'
// snapshots the widest, i.e. the longest wait; else a final's
// worst-window snapshot). Result.WriteFile stores its
// JSON beside the result. A NIC IRQ allowed on a pinned endpoint's CPU is
// a note of the case (report.IRQOverlaps).
func (res *FlowResult) explain(c *report.Case, spec FlowSpec) {
	add := func(f *agentproto.Final, board string) {
		if f != nil && f.Counters != nil {
			ec := *f.Counters
			ec.Endpoint = f.Endpoint + " on " + board
			c.Counters = append(c.Counters, ec)
		}
	}
	add(res.Publisher, spec.From)
	var pick *agentproto.TraceSnapshot
	board := ""
	for i, f := range res.Subscribers {
		to := ""
		if i < len(spec.To) {
			to = spec.To[i]
		}
		add(f, to)
		if i < len(res.Windows) {
			for j := range res.Windows[i] {
				if t := res.Windows[i][j].Trace; t != nil && (pick == nil || t.ToNs-t.FromNs > pick.ToNs-pick.FromNs) {
					pick, board = t, to
				}
			}
		}
		if pick == nil && f != nil && f.Trace != nil {
			pick, board = f.Trace, to
		}
	}
	if pick != nil {
		c.Trace = pick.Ref(board)
	}
	// The figures of a traced case were taken with the trace armed, kept
	// snapshot or not: say so, since arming costs latency.
	if spec.Trace != nil && c.Trace == nil {
		c.Add(report.Noted("rig.explain", fmt.Sprintf("measured with the kernel trace armed (%s, %d KiB per CPU); no window kept a snapshot; what arming costs: docs/report.md, Explaining a tail", spec.Trace.Mode, spec.Trace.BufferKB)))
	}
	for _, p := range res.pins {
		c.Add(report.Noted("rig.explain", report.IRQOverlaps(p.tuning, []report.PinnedEndpoint{p.ep})...))
	}
	if spec.Stages {
		c.Add(report.Noted("rig.explain", "measured with the shared-memory stage stamps on (up to four CLOCK_MONOTONIC reads per message, more while a subscriber spins)"))
	}
	if res.Publisher != nil && res.Publisher.Stages != nil {
		subs := make([]*agentproto.StageStamps, 0, len(res.Subscribers))
		for _, f := range res.Subscribers {
			if f != nil {
				subs = append(subs, f.Stages)
			}
		}
		c.Stages = agentproto.JoinStages(res.Publisher.Stages, subs)
	}
}

// pinned is an endpoint pinned to a CPU and the real-time tuning its
// board's agent reported in its hello (nil when it reported none).
type pinned struct {
	ep     report.PinnedEndpoint
	tuning *report.HostTuning
}

// pins lists the flow's endpoints that were started pinned to a CPU
// (agentproto.Start.CPU, from the rack's board CPUs): a NIC IRQ allowed
// on such a CPU becomes a finding of the case (report.IRQOverlaps).
func (f *Flow) pins() []pinned {
	var out []pinned
	for _, e := range append([]*Endpoint{f.Publisher}, f.Subscribers...) {
		if e == nil || e.Spec.CPU == nil || e.agent == nil {
			continue
		}
		host := ""
		if e.agent.Board != nil {
			host = e.agent.Board.Name
		}
		out = append(out, pinned{report.PinnedEndpoint{Endpoint: e.Spec.Endpoint, Host: host, CPU: *e.Spec.CPU}, e.agent.Hello.Tuning})
	}
	return out
}
