package rig

import (
	"sync/atomic"

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
