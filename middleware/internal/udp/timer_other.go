//go:build !linux

package udp

import (
	"net"
	"sync"
	"time"
)

// preciseTimer off Linux is a plain Go timer: there is no timerfd, so a
// batch delay is only as precise as the runtime's timers (~1 ms when the
// process is idle). Only the Linux build is measured.
type preciseTimer struct {
	t    *time.Timer
	done chan struct{}
	once sync.Once
}

func newPreciseTimer() (*preciseTimer, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &preciseTimer{t: t, done: make(chan struct{})}, nil
}

// arm (re)starts the timer to fire once after d.
func (t *preciseTimer) arm(d time.Duration) { t.t.Reset(max(d, 1)) }

// wait blocks until the timer fires or the timer is closed (error).
func (t *preciseTimer) wait() error {
	select {
	case <-t.t.C:
		return nil
	case <-t.done:
		return net.ErrClosed
	}
}

func (t *preciseTimer) close() error {
	t.once.Do(func() { t.t.Stop(); close(t.done) })
	return nil
}
