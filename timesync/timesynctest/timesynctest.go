// Package timesynctest is the conformance test every [timesync.Source]
// passes: the real ptp4l reader (against a real ptp4l) and the fake in
// timesyncsim.
package timesynctest

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
)

// Options describes the source under test.
type Options struct {
	// LockWithin bounds how long the source may take to report 2
	// consecutive locked samples (0 → 30 s).
	LockWithin time.Duration
	// Bound is the |offset| bound used for the lock check (0 → 100 µs).
	Bound time.Duration
	// Period is the poll period for the lock check (0 → the timesync default).
	Period time.Duration
}

// Run checks src's contract. newSource must return a fresh source that
// becomes locked (it may take up to opts.LockWithin); if it implements
// io.Closer, Run closes it and checks the closed behaviour.
func Run(t *testing.T, newSource func(t *testing.T) timesync.Source, opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.LockWithin <= 0 {
		opts.LockWithin = 30 * time.Second
	}
	if opts.Bound <= 0 {
		opts.Bound = 100 * time.Microsecond
	}
	src := newSource(t)

	t.Run("CancelledContext", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		st, err := src.Status(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Status(cancelled ctx) err = %v, want context.Canceled", err)
		}
		if st.ReadAt.IsZero() {
			t.Error("Status with an error must still set ReadAt")
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("Status(cancelled ctx) took %v", el)
		}
	})

	t.Run("LocksAndReportsConsistentStatus", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), opts.LockWithin)
		defer cancel()
		b := timesync.Board{Name: "dut", Source: src}
		if err := timesync.RequireLocked(ctx, []timesync.Board{b}, opts.Bound, 2, &timesync.RequireOptions{Period: opts.Period}); err != nil {
			t.Fatal(err)
		}
		prev := time.Time{}
		for i := 0; i < 3; i++ {
			before := time.Now()
			st, err := src.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.ReadAt.Before(before) || time.Since(st.ReadAt) > time.Second {
				t.Errorf("ReadAt %v not within this read (started %v)", st.ReadAt, before)
			}
			if !prev.IsZero() && st.ReadAt.Before(prev) {
				t.Errorf("ReadAt went backwards: %v then %v", prev, st.ReadAt)
			}
			prev = st.ReadAt
			if st.PortState != timesync.PortStateSlave || st.GMIdentity == 0 || st.ClockIdentity == 0 || st.GMIdentity == st.ClockIdentity {
				t.Errorf("locked source reports %+v: want SLAVE, a GM identity other than its own", st)
			}
			if !st.LastSyncIngress.Clock.CrossHost() || st.LastSyncIngress.Ns == 0 {
				t.Errorf("ingress stamp %v: want a non-zero cross-host clock stamp", st.LastSyncIngress)
			}
			if st.MeanPathDelay <= 0 {
				t.Errorf("mean path delay %v, want > 0 once locked", st.MeanPathDelay)
			}
			if st.HasPHC == (st.PHCNote != "") {
				t.Errorf("HasPHC %t with PHCNote %q: exactly one must say whether there is a PHC", st.HasPHC, st.PHCNote)
			}
		}
	})

	t.Run("ConcurrentReads", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					if _, err := src.Status(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("Close", func(t *testing.T) {
		c, ok := src.(io.Closer)
		if !ok {
			t.Skip("source has no Close")
		}
		if err := c.Close(); err != nil {
			t.Fatalf("first Close: %v", err)
		}
		if err := c.Close(); !errors.Is(err, timesync.ErrClosed) {
			t.Errorf("second Close = %v, want ErrClosed", err)
		}
		if _, err := src.Status(context.Background()); !errors.Is(err, timesync.ErrClosed) {
			t.Errorf("Status after Close = %v, want ErrClosed", err)
		}
	})
}

// MuteSocket binds a Unix datagram socket in a temporary directory that
// is never read, like a SIGSTOPped ptp4l: its receive queue
// (net.unix.max_dgram_qlen, 10 by default) fills and then a connected
// sender's write blocks. It returns the socket's path; the socket is
// closed when the test ends.
func MuteSocket(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mute.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return path
}
