package udp

import (
	"sync"
	"sync/atomic"
	"time"
)

// readLease hands a socket between a caller that reads it on its own
// thread (a Receiver's consumer in Next, a reliable Sender waiting for its
// window) and the endpoint's background goroutine, which reads only while
// no caller has for lease (docs/udp.md, "Receive path" and "Publisher: who
// reads acknowledgements"). want, inRead and touched are read by the
// goroutine without a lock; sequentially consistent atomics, so the
// goroutine's "set deadline, then check want" and the caller's "set want,
// then move the deadline" cannot both miss. The timer is the goroutine's
// own.
type readLease struct {
	lease   time.Duration
	want    atomic.Bool  // a caller waits for the lock: the goroutine must let go
	inRead  atomic.Bool  // a caller holds or wants the lock
	touched atomic.Int64 // ns since the endpoint's base when a caller last released it
	// checks counts the goroutine's wake-ups that found a caller still
	// holding the lease (tests; docs/udp.md).
	checks atomic.Uint64
	sleep  *time.Timer // nil until the goroutine first waits
}

// init sets the lease length, lapsed from the start.
func (l *readLease) init(lease time.Duration) {
	l.lease = lease
	l.touched.Store(-int64(lease))
}

// take locks mu, the socket's read lock, for a caller on its own thread.
// When the goroutine holds it (reading), it moves conn's read deadline
// into the past to make it let go: only on a hand-over, never per read.
// Reports whether there was one.
func (l *readLease) take(mu *sync.Mutex, conn Conn) bool {
	l.inRead.Store(true)
	if mu.TryLock() {
		return false
	}
	l.want.Store(true)
	_ = conn.SetReadDeadline(time.Unix(1, 0))
	mu.Lock()
	l.want.Store(false)
	return true
}

// release unlocks mu after take; now (ns since the endpoint's base)
// starts the lease.
func (l *readLease) release(mu *sync.Mutex, now int64) {
	l.touched.Store(now)
	mu.Unlock()
	l.inRead.Store(false)
}

// active reports whether a caller reads now or did within the lease, and
// if so how much longer the goroutine should stay away.
func (l *readLease) active(now int64) (bool, time.Duration) {
	if l.want.Load() || l.inRead.Load() {
		return true, l.lease
	}
	if left := l.touched.Load() + int64(l.lease) - now; left > 0 {
		return true, time.Duration(left)
	}
	return false, 0
}

// pause is the goroutine's wait while a caller holds the lease: d, or
// until done is closed (false). Counted in checks.
func (l *readLease) pause(d time.Duration, done <-chan struct{}) bool {
	l.checks.Add(1)
	if l.sleep == nil {
		l.sleep = time.NewTimer(d)
	} else {
		l.sleep.Reset(d)
	}
	select {
	case <-done:
		l.sleep.Stop()
		return false
	case <-l.sleep.C:
		return true
	}
}
