package udp

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer is a one-shot timerfd read through the runtime poller.
// Go's own timers wake an idle process through epoll_wait's millisecond
// timeout, so a 200 µs batch delay would really be ~1 ms; a timerfd wakes
// epoll at the requested microsecond.
type preciseTimer struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newPreciseTimer() (*preciseTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("udp: timerfd_create: %w", err)
	}
	// Non-blocking, so os.File registers it with the poller. Never call
	// f.Fd(): it would switch the descriptor back to blocking.
	return &preciseTimer{fd: fd, f: os.NewFile(uintptr(fd), "udp-batch-timer")}, nil
}

// arm (re)starts the timer to fire once after d. 0 allocs.
func (t *preciseTimer) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

// wait blocks until the timer fires or the timer is closed (error).
func (t *preciseTimer) wait() error {
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *preciseTimer) close() error { return t.f.Close() }
