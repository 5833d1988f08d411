// Package soak is the library side of long soaks: the per-window record every
// agent summary goes into, the crash-safe JSONL checkpoint (append + fsync per
// window, torn tails tolerated, resumable), reading a partial or complete
// checkpoint back with constant memory per window, robust trends (Theil–Sen)
// and the soak verdicts (loss, memory growth, latency drift, max, PTP lock,
// restart recovery). The suites compose it; it imports only package report.
package soak
