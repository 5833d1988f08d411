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
