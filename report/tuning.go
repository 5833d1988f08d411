package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PinnedEndpoint is an endpoint whose hot loop is pinned to one CPU of a
// host (agentproto.Start.CPU).
type PinnedEndpoint struct {
	Endpoint string // e.g. "flow-sub0"
	Host     string // the board it runs on, for the finding's words
	CPU      int
}

// IRQOverlaps returns a finding for each NIC whose IRQs may be handled on
// the CPU an endpoint of the same host is pinned to (the CPU is in the
// IRQ's smp_affinity_list): such an interrupt and the softirq it raises
// preempt the endpoint, whatever its real-time priority, which is a tail
// cause the IRQ masks alone leave to the reader to work out. One finding
// per endpoint and NIC, naming the IRQs; an affinity that cannot be
// parsed is named as such instead of being guessed at. t nil: none.
func IRQOverlaps(t *HostTuning, eps []PinnedEndpoint) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, ep := range eps {
		type nicHits struct {
			nic  string
			irqs []string
		}
		var hits []nicHits
		var unknown []string
		for _, q := range t.NICIRQs {
			if q.Affinity == "" {
				continue // unreadable: CollectTuning left it empty
			}
			cpus, err := parseCPUList(q.Affinity)
			if err != nil {
				unknown = append(unknown, fmt.Sprintf("IRQ %d of NIC %s on %s: smp_affinity_list %q unreadable (%v); whether it can preempt %s on CPU %d is unknown",
					q.IRQ, q.NIC, ep.Host, q.Affinity, err, ep.Endpoint, ep.CPU))
				continue
			}
			if !slices.Contains(cpus, ep.CPU) {
				continue
			}
			s := strconv.Itoa(q.IRQ)
			if q.Name != "" {
				s += " (" + q.Name + ")"
			}
			s += " affinity " + q.Affinity
			if i := slices.IndexFunc(hits, func(h nicHits) bool { return h.nic == q.NIC }); i >= 0 {
				hits[i].irqs = append(hits[i].irqs, s)
			} else {
				hits = append(hits, nicHits{q.NIC, []string{s}})
			}
		}
		for _, h := range hits {
			word, pron := "IRQ", "it"
			if len(h.irqs) > 1 {
				word, pron = "IRQs", "them"
			}
			out = append(out, fmt.Sprintf("NIC %s %s %s may be handled on CPU %d of %s, where endpoint %s is pinned: "+
				"the interrupt and its softirq preempt the endpoint whatever its priority (move %s off CPU %d: /proc/irq/N/smp_affinity_list)",
				h.nic, word, strings.Join(h.irqs, ", "), ep.CPU, ep.Host, ep.Endpoint, pron, ep.CPU))
		}
		out = append(out, unknown...)
	}
	return out
}

// parseCPUList parses a kernel CPU list such as "0-3,8,10-11" (cpuset(7)
// list format; "" is no CPU).
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU %q", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU range %q", part)
			}
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("CPU range %q too wide", part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
