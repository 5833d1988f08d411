package middleware

import _ "unsafe" // go:linkname

// The runtime reads CLOCK_MONOTONIC and CLOCK_REALTIME through the vDSO
// (no syscall, no allocation). Both symbols are on the runtime's list of
// linknames it keeps stable (go.dev/issue/67401). time.Now cannot be used
// for the monotonic stamp: its monotonic reading is relative to process
// start, and headers must compare across processes.

//go:linkname nanotime runtime.nanotime
func nanotime() int64

//go:linkname timeNow time.now
func timeNow() (sec int64, nsec int32, mono int64)

// stampNow returns CLOCK_MONOTONIC and the reading of clock, both in ns,
// taken back to back. Realtime and monotonic come from the vDSO; other
// clocks (CLOCK_TAI) cost one clock_gettime syscall. 0 allocs.
func stampNow(clock ClockID) (mono, other int64) {
	switch clock {
	case ClockRealtime:
		sec, nsec, m := timeNow()
		return m, sec*1e9 + int64(nsec)
	case ClockMonotonic:
		m := nanotime()
		return m, m
	}
	m := nanotime()
	return m, clockGettime(int32(clock))
}

// MonoNow is CLOCK_MONOTONIC in ns, the clock of Header.SendMono and
// Message.RecvMono; comparable across processes on one host. 0 allocs.
func MonoNow() int64 { return nanotime() }
