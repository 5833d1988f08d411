package middleware

import "sync/atomic"

// lifecycle lets Close run from any goroutine (even from inside a
// callback) while a Send or Receive runs: every call holds a reference,
// Close drops the owner's, and whoever drops the last one tears the
// transport down, so memory is never unmapped under a running call.
type lifecycle struct {
	state atomic.Uint64 // closedBit | references (owner holds 1)
}

const closedBit = 1 << 63

func (l *lifecycle) init() { l.state.Store(1) }

// enter takes a reference; false once closed. 0 allocs.
func (l *lifecycle) enter() bool {
	for {
		s := l.state.Load()
		if s&closedBit != 0 {
			return false
		}
		if l.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// enterLive takes a reference while the transport is still up: before
// Close, and after it while a call still holds a reference (the teardown
// waits for the last one). false once the references are gone. Lets Stats
// read a closed subscriber from inside its own callback, whose reference
// keeps the transport up, instead of waiting for a teardown that needs
// that callback to return first. 0 allocs.
func (l *lifecycle) enterLive() bool {
	for {
		s := l.state.Load()
		if s&^closedBit == 0 {
			return false
		}
		if l.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// leave drops a reference and reports whether the caller must tear down.
func (l *lifecycle) leave() bool { return l.state.Add(^uint64(0)) == closedBit }

// closing reports whether Close was called.
func (l *lifecycle) closing() bool { return l.state.Load()&closedBit != 0 }

// close marks closed and drops the owner's reference. first is false on
// repeated calls; last is true when the caller must tear down now.
func (l *lifecycle) close() (first, last bool) {
	for {
		s := l.state.Load()
		if s&closedBit != 0 {
			return false, false
		}
		if l.state.CompareAndSwap(s, (s|closedBit)-1) {
			return true, s-1 == 0
		}
	}
}
