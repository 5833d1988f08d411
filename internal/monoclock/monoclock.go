// Package monoclock is the module's one reading of CLOCK_MONOTONIC without
// a system call: the Go runtime's vDSO path, reached by go:linkname. It is
// a leaf (imports nothing of the module), so middleware, gpio, timesync,
// agent and the bench share it instead of each declaring the linkname.
//
// Why not time.Now: its monotonic reading is relative to process start, and
// latency stamps must compare across processes of one host. Both symbols
// below are on the runtime's list of linknames kept stable for external
// use (go.dev/issue/67401).
package monoclock

import _ "unsafe" // for go:linkname

// Now returns CLOCK_MONOTONIC in ns (on Linux; elsewhere the runtime's
// monotonic clock), the same value clock_gettime(CLOCK_MONOTONIC) gives any
// process on this host. No system call, no allocation; safe for concurrent
// use.
//
//go:linkname Now runtime.nanotime
func Now() int64

// WallAndMono returns CLOCK_REALTIME (sec, nsec since the Unix epoch) and
// CLOCK_MONOTONIC (ns) read back to back by one runtime call. No system
// call, no allocation; safe for concurrent use.
//
//go:linkname WallAndMono time.now
func WallAndMono() (sec int64, nsec int32, mono int64)
