// Package clk reads kernel clocks with clock_gettime(2). It is the only
// place in timesync that makes the raw syscall.
package clk

import _ "unsafe" // for go:linkname

// Nanotime is CLOCK_MONOTONIC read through the vDSO by the Go runtime: the
// same value other processes on this host read from CLOCK_MONOTONIC, which
// is what single-host latency needs (time.Now's monotonic reading is
// relative to process start and useless across processes).
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64
