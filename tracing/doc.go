// Package tracing explains latency tails with the kernel's own account of
// them: it arms a bounded tracefs trace (scheduler switches and wake-ups,
// IRQ handlers, softirqs, and the endpoints' trace_marker lines at send and
// receive) on the measured CPUs, keeps the part of it that covers a window
// which broke a bound, exports it as Chrome/Perfetto trace-event JSON and
// says in words what ran on the receiver's CPU while the late message
// waited.
//
// Timestamps are CLOCK_MONOTONIC nanoseconds (the instance's trace clock is
// "mono"), the clock of middleware.Header.SendMono; the text trace has
// microsecond resolution, so every trace-derived duration is ±1 µs.
//
// The tracefs system calls live in internal/tracefs; this package parses,
// exports and explains, and is pure Go elsewhere.
package tracing
