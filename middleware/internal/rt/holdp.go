package rt

import (
	"runtime"
	"sync/atomic"
)

// heldPs counts the blocking waits that hold their Go scheduler processor
// (P) right now, in the whole process: a UDP subscriber's recvmsg
// (UDPConfig.DedicatedReader) and a shared-memory subscriber's futex
// sleep (SubscriberOptions.DedicatedWait) share it.
var heldPs atomic.Int32

// HoldP reserves one of the GOMAXPROCS−1 Ps a dedicated wait may hold,
// so that one P is always left for the rest of the process; false when
// none is free (the caller then waits the ordinary way, through a
// syscall that hands its P on). A true return must be paired with
// ReleaseP once the wait returns. Safe from any goroutine; does not block;
// 0 allocs.
func HoldP() bool {
	for {
		n := heldPs.Load()
		if int(n) >= runtime.GOMAXPROCS(0)-1 {
			return false
		}
		if heldPs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// ReleaseP returns the reservation HoldP made.
func ReleaseP() { heldPs.Add(-1) }

// Held is how many waits hold a P right now (for tests and diagnostics).
func Held() int { return int(heldPs.Load()) }
