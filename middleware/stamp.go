package middleware

import "github.com/hilrig/hilrig/internal/monoclock"

// Stamps read CLOCK_MONOTONIC and CLOCK_REALTIME through the runtime's
// vDSO path (monoclock: no syscall, no allocation). time.Now cannot be used
// for the monotonic stamp: its monotonic reading is relative to process
// start, and headers must compare across processes.
// stampNow returns CLOCK_MONOTONIC and the reading of clock, both in ns,
// taken back to back. Realtime and monotonic come from the vDSO; other
// clocks (CLOCK_TAI) cost one clock_gettime syscall. 0 allocs.
func stampNow(clock ClockID) (mono, other int64) {
	switch clock {
	case ClockRealtime:
		sec, nsec, m := monoclock.WallAndMono()
		return m, sec*1e9 + int64(nsec)
	case ClockMonotonic:
		m := monoclock.Now()
		return m, m
	}
	m := monoclock.Now()
	return m, clockGettime(int32(clock))
}

// MonoNow is CLOCK_MONOTONIC in ns, the clock of Header.SendMono and
// Message.RecvMono; comparable across processes on one host. 0 allocs.
func MonoNow() int64 { return monoclock.Now() }
