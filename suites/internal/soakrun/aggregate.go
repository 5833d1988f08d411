package soakrun

import (
	"slices"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// Source yields an endpoint's window summaries that arrived since the
// previous call (in order). It is called from the runner goroutine only.
type Source interface {
	Take() []agentproto.Window
}

// WindowTaker is what the rig's *rig.Endpoint offers: the windows that
// arrived since the previous call, handed over (the rig keeps no copy, so
// the controller's memory does not grow with the soak's length).
type WindowTaker interface {
	TakeWindows() []agentproto.Window
}

// Drain adapts a WindowTaker (a rig endpoint) to a Source.
type Drain struct{ E WindowTaker }

// Take returns the windows that arrived since the previous call.
func (d Drain) Take() []agentproto.Window { return d.E.TakeWindows() }

// Track is one endpoint feeding the soak.
type Track struct {
	// Agent is the board the endpoint runs on (the checkpoint's agent).
	Agent string
	// Flow is the stream name; publisher and subscribers of one flow share it.
	Flow string
	Role agentproto.Role
	Src  Source
	// Method of the subscriber's latency samples (nil: one clock, mono).
	Method *report.Method
	// PTPGated marks a subscriber whose latency crosses clocks: its samples
	// are excluded (and counted) in windows where a board is not locked.
	PTPGated bool
}

// aggregator accumulates agent windows into the open soak window.
type aggregator struct {
	agents []string // first-seen order
	sent   map[string]int64
	subs   map[subKey]*soak.StreamWindow
	subOrd []subKey
	rss    map[string]int64
	cpuNs  map[string]map[*Track]int64
	events map[string][]soak.Event
	// totals over the whole soak, for progress
	totSent, totDelivered, totLost int64
}

type subKey struct{ agent, flow string }

func newAggregator() *aggregator {
	a := &aggregator{}
	a.reset()
	return a
}

func (a *aggregator) reset() {
	a.sent = map[string]int64{}
	a.subs = map[subKey]*soak.StreamWindow{}
	a.subOrd = a.subOrd[:0]
	a.rss = map[string]int64{}
	a.cpuNs = map[string]map[*Track]int64{}
	a.events = map[string][]soak.Event{}
}

func (a *aggregator) agent(name string) {
	if !slices.Contains(a.agents, name) {
		a.agents = append(a.agents, name)
	}
}

// add folds one endpoint window in.
func (a *aggregator) add(t *Track, w agentproto.Window) {
	a.agent(t.Agent)
	if w.RSSBytes > 0 {
		a.rss[t.Agent] = w.RSSBytes // the latest sample of the agent process
	}
	// CPU time is per agent process; every endpoint of that process
	// reports it, so take the largest per-endpoint sum, never the total.
	m := a.cpuNs[t.Agent]
	if m == nil {
		m = map[*Track]int64{}
		a.cpuNs[t.Agent] = m
	}
	m[t] += w.CPUUserNs + w.CPUSysNs
	switch t.Role {
	case agentproto.Publisher:
		a.sent[t.Flow] += int64(w.Sent)
		a.totSent += int64(w.Sent)
	case agentproto.Subscriber:
		s := a.stream(t)
		s.Delivered += int64(w.Received)
		s.Lost += int64(w.Lost)
		a.totDelivered += int64(w.Received)
		a.totLost += int64(w.Lost)
		if w.Latency != nil && w.Latency.Count() > 0 {
			if s.Histogram == nil {
				s.Histogram = report.NewHistogram()
			}
			s.Histogram.Merge(w.Latency)
		}
	}
}

func (a *aggregator) stream(t *Track) *soak.StreamWindow {
	k := subKey{t.Agent, t.Flow}
	s := a.subs[k]
	if s == nil {
		s = &soak.StreamWindow{Stream: t.Flow, Method: t.Method}
		a.subs[k] = s
		a.subOrd = append(a.subOrd, k)
	}
	return s
}

func (a *aggregator) event(agent string, e soak.Event) {
	a.agent(agent)
	a.events[agent] = append(a.events[agent], e)
}

// close builds the soak window [start, end) and resets for the next one.
// ptp returns each agent's clock sample (nil without PTP); a stream whose
// board is unlocked has its samples excluded (moved to Excluded).
func (a *aggregator) close(start, end time.Time, ptp func(agent string) *soak.PTPSample, gated map[subKey]bool) soak.Window {
	w := soak.Window{Start: start, End: end}
	// Every flow with subscribers gets its publisher's sent; a flow whose
	// subscriber said nothing this window still appears (0 delivered).
	span := end.Sub(start)
	for _, ag := range a.agents {
		aw := soak.AgentWindow{Agent: ag, RSSBytes: a.rss[ag], Events: a.events[ag]}
		var cpu int64
		for _, ns := range a.cpuNs[ag] {
			cpu = max(cpu, ns)
		}
		if span > 0 {
			aw.CPUPercent = 100 * float64(cpu) / float64(span)
		}
		if ptp != nil {
			aw.PTP = ptp(ag)
		}
		w.Agents = append(w.Agents, aw)
	}
	idx := func(agent string) int { return slices.Index(a.agents, agent) }
	for _, k := range a.subOrd {
		s := a.subs[k]
		s.Sent = a.sent[k.flow]
		if gated[k] && s.Histogram != nil {
			unlocked := false
			for _, aw := range w.Agents {
				if aw.PTP != nil && !aw.PTP.Locked {
					unlocked = true
				}
			}
			if unlocked {
				s.Excluded += s.Histogram.Count()
				s.Histogram = nil
			}
		}
		i := idx(k.agent)
		w.Agents[i].Streams = append(w.Agents[i].Streams, *s)
	}
	a.reset()
	return w
}
