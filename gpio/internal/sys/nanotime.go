package sys

import _ "unsafe" // for go:linkname

// nanotime is the runtime's CLOCK_MONOTONIC reading (vDSO on Linux). It is
// on the runtime's list of linknamed symbols kept for external use.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
