package report

import "github.com/hilrig/hilrig/internal/kind"

// Route is where a case's traffic ran, as the controller knew it when it
// started the traffic (rig): the sending and receiving boards, whether
// they share one kernel (so one CLOCK_MONOTONIC) and the transport class
// the middleware comparison groups by. The report reads these facts; it
// never re-derives them from Method.Clocks or Notes.
type Route struct {
	// From is the sending board (publisher, pinger); To the receiving
	// board(s) (subscribers, echo), comma-separated when several.
	From string `json:"from"`
	To   string `json:"to"`
	// SameKernel: every end ran on one kernel (fixtures.Rack.SameKernel):
	// one host, one clock.
	SameKernel bool `json:"same_kernel"`
	// Class is the transport class (in-process, shared memory, UDP on one
	// host or between boards).
	Class kind.Class `json:"class"`
}

// IsReaction reports whether c is a device under test's reaction (package
// dut): it carries the reaction's miss rate (ExtraDUTMissRate).
func (c *Case) IsReaction() bool {
	_, ok := c.Extra[ExtraDUTMissRate]
	return ok
}

// BusOnSamePath returns the one-way bus cases of r that ran on the path
// of reaction case c: the same middleware and transport class, between
// the same two boards in either direction (the stimulus leg and the
// response leg), from their routes as the rig decided them; the same
// payload first, then by suite and name as r holds them. A reaction
// crosses the bus twice, so these say how much of it is the bus. nil
// when c has no route or is not a reaction.
func BusOnSamePath(r *Result, c *Case) []*Case {
	if c.Route == nil || !c.IsReaction() {
		return nil
	}
	var same, other []*Case
	for i := range r.Cases {
		b := &r.Cases[i]
		if b == c || b.IsReaction() || b.Route == nil || b.Method.Kind != kind.OneWay || b.Middleware.Name() != c.Middleware.Name() ||
			b.Route.Class != c.Route.Class || !sameEnds(b.Route, c.Route) {
			continue
		}
		if b.PayloadBytes == c.PayloadBytes {
			same = append(same, b)
		} else {
			other = append(other, b)
		}
	}
	return append(same, other...)
}

// sameEnds: a and b join the same two boards, in either direction.
func sameEnds(a, b *Route) bool {
	return a.From == b.From && a.To == b.To || a.From == b.To && a.To == b.From
}
