package agentproto

import (
	"encoding/json"

	"github.com/hilrig/hilrig/report"
)

// Trace modes of TraceSpec.Mode.
const (
	// TraceOnBreach keeps the kernel trace of every window whose max or
	// p99 breaks its bound (at most MaxTraceSnapshots per endpoint).
	TraceOnBreach = "on-breach"
	// TraceWorstWindow keeps the trace of the endpoint's worst window (by
	// max latency), sent in its final, besides the breaches.
	TraceWorstWindow = "worst-window"
)

// Trace bounds: the buffer per CPU (KiB) and how many snapshots one
// endpoint sends (each is up to a few MiB of JSON).
const (
	MaxTraceBufferKB  = 16 * 1024
	MaxTraceSnapshots = 8
)

// TraceSpec asks an endpoint to arm a kernel trace (tracefs) while it runs:
// a publisher writes a "send" trace marker per message, a subscriber a
// "recv" marker, and a subscriber keeps the trace covering its late
// messages.
type TraceSpec struct {
	Mode string `json:"mode"`
	// BufferKB is the ring buffer per traced CPU; 0 = 1024.
	BufferKB int `json:"buffer_kb,omitempty"`
	// CPUs are the measured CPUs to trace; empty = every CPU.
	CPUs []int `json:"cpus,omitempty"`
	// MaxNs / P99Ns are the window bounds (0 = no such bound); a window
	// whose max or p99 exceeds one is a breach.
	MaxNs int64 `json:"max_ns,omitempty"`
	P99Ns int64 `json:"p99_ns,omitempty"`
}

// TraceSnapshot is the trace of one late window: the part of the kernel
// trace around the window's worst message, as Chrome/Perfetto trace-event
// JSON, and what it says in words.
type TraceSnapshot struct {
	Reason  string `json:"reason"`
	Summary string `json:"summary"`
	// FromNs/ToNs bound the snapshot, CLOCK_MONOTONIC of the board.
	FromNs   int64 `json:"from_ns"`
	ToNs     int64 `json:"to_ns"`
	CPUs     []int `json:"cpus,omitempty"`
	BufferKB int   `json:"buffer_kb"`
	// Method says how the trace was taken.
	Method string `json:"method"`
	// Chrome is the trace-event JSON document.
	Chrome json.RawMessage `json:"chrome"`
}

// Ref converts the snapshot to the report's reference (the caller writes
// Chrome to a file and sets File).
func (t *TraceSnapshot) Ref(board string) *report.TraceRef {
	return &report.TraceRef{Reason: t.Reason, Summary: t.Summary, FromNs: t.FromNs, ToNs: t.ToNs,
		Board: board, CPUs: t.CPUs, BufferKB: t.BufferKB, Method: t.Method, Chrome: t.Chrome}
}

func (s *Start) validateTrace() error {
	t := s.Trace
	if t == nil {
		return nil
	}
	bad := invalidFor(s.Endpoint)
	switch t.Mode {
	case TraceOnBreach, TraceWorstWindow:
	default:
		return bad("start.trace.mode %q: want %s or %s", t.Mode, TraceOnBreach, TraceWorstWindow)
	}
	if t.BufferKB < 0 || t.BufferKB > MaxTraceBufferKB {
		return bad("start.trace.buffer_kb %d: want 0 (default) or 1..%d", t.BufferKB, MaxTraceBufferKB)
	}
	for _, c := range t.CPUs {
		if c < 0 || c > 4095 {
			return bad("start.trace.cpus: CPU %d out of range", c)
		}
	}
	if t.MaxNs < 0 || t.P99Ns < 0 {
		return bad("start.trace: bounds must not be negative")
	}
	return nil
}
