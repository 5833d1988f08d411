//go:build linux

package middleware_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// closePair is a publisher and subscriber of one transport, and whether
// the subscriber's segment file is still in /dev/shm (always false off
// shm).
type closePair struct {
	pub    *middleware.Publisher
	sub    *middleware.Subscriber
	path   string // the segment file (shm)
	exists func() bool
}

func newClosePair(t *testing.T, transport middleware.Transport) closePair {
	t.Helper()
	d := testDomain(t)
	n := openNode(t, "close", d)
	c := middleware.Contract{Topic: "close/cb", MaxPayload: 64, Transport: transport, Slots: 4}
	if transport == middleware.TransportUDP {
		c.UDP = middleware.UDPConfig{Listen: "127.0.0.1:0"}
	}
	sub, err := n.NewSubscriber(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if transport == middleware.TransportUDP {
		c.UDP.Peers = []string{sub.LocalUDPAddr().String()}
	}
	pub, err := n.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := middleware.SegmentPath("", d, c.Topic)
	exists := func() bool {
		if transport != middleware.TransportShm {
			return false
		}
		_, err := os.Stat(path)
		return err == nil
	}
	return closePair{pub: pub, sub: sub, path: path, exists: exists}
}

// sendUntil publishes until delivered is closed (a best-effort UDP
// datagram sent before the subscriber's socket is read may be dropped by
// nothing but timing, so it is sent again); at most 5 s.
func (p closePair) sendUntil(t *testing.T, delivered <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if err := p.pub.Send([]byte("close")); err != nil && !errors.Is(err, middleware.ErrTimeout) {
			t.Fatal(err)
		}
		select {
		case <-delivered:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("no message delivered within 5 s")
}

// nextUntilEntered runs p.sub.Next in another goroutine with a callback
// that signals it has started and then runs fn, sends until that callback
// has started, and returns what that Next will return.
func (p closePair) nextUntilEntered(t *testing.T, fn func()) <-chan error {
	t.Helper()
	entered := make(chan struct{})
	nextDone := make(chan error, 1)
	go func() {
		nextDone <- p.sub.Next(context.Background(), func(*middleware.Message) {
			close(entered)
			fn()
		})
	}()
	p.sendUntil(t, entered)
	return nextDone
}

// within returns what ch yields, failing the test with "what" when
// nothing arrives within 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal(what + " within 5 s")
		panic("unreachable")
	}
}

var closeTransports = []struct {
	name string
	tr   middleware.Transport
}{{"shm", middleware.TransportShm}, {"intra", middleware.TransportIntra}, {"udp", middleware.TransportUDP}}

// TestCloseInsideCallbackReturns: Close called from inside the subscriber's
// own callback returns at once (it must not wait for the callback it is
// called from), and the Next that ran the callback then returns; the
// next Next says ErrClosed.
func TestCloseInsideCallbackReturns(t *testing.T) {
	for _, tc := range closeTransports {
		t.Run(tc.name, func(t *testing.T) {
			p := newClosePair(t, tc.tr)
			closed := make(chan error, 1)
			nextDone := p.nextUntilEntered(t, func() { closed <- p.sub.Close() })
			if err := within(t, closed, "Close called inside the callback (waiting for its own callback?) did not return"); err != nil {
				t.Fatalf("Close inside the callback: %v", err)
			}
			if err := within(t, nextDone, "the Next that ran the callback did not return after Close"); err != nil && !errors.Is(err, middleware.ErrClosed) {
				t.Fatalf("the Next that ran the callback returned %v", err)
			}
			if err := p.sub.Next(context.Background(), func(*middleware.Message) {}); !errors.Is(err, middleware.ErrClosed) {
				t.Fatalf("Next after Close returned %v, want ErrClosed", err)
			}
		})
	}
}

// TestCloseWaitsForRunningCallback: Close called from another goroutine
// while a callback runs returns only after that callback has returned,
// with the subscriber's segment released (its doc says so). The window
// below only gives a premature return time to show; a correct Close
// passes however long it is.
func TestCloseWaitsForRunningCallback(t *testing.T) {
	for _, tc := range closeTransports {
		t.Run(tc.name, func(t *testing.T) {
			p := newClosePair(t, tc.tr)
			release := make(chan struct{})
			nextDone := p.nextUntilEntered(t, func() { <-release })
			// The subscriber is now the segment's last user.
			if err := p.pub.Close(); err != nil {
				t.Fatal(err)
			}
			type result struct {
				err     error
				segment bool
			}
			closed := make(chan result, 1)
			go func() {
				err := p.sub.Close()
				closed <- result{err, p.exists()}
			}()
			select {
			case r := <-closed:
				close(release)
				t.Fatalf("Close returned (err %v) while the callback was still running", r.err)
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			r := within(t, closed, "Close still blocked after the callback returned")
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.segment {
				t.Fatal("segment still in /dev/shm when Close returned")
			}
			if err := <-nextDone; err != nil && !errors.Is(err, middleware.ErrClosed) {
				t.Fatalf("Next returned %v", err)
			}
		})
	}
}

// TestStatsInsideCallbackAfterClose: Stats called from inside the
// subscriber's callback after that callback closed the subscriber returns
// (the teardown it would wait for needs the callback to return first);
// after the teardown the message is counted.
func TestStatsInsideCallbackAfterClose(t *testing.T) {
	for _, tc := range closeTransports {
		t.Run(tc.name, func(t *testing.T) {
			p := newClosePair(t, tc.tr)
			stats := make(chan middleware.SubscriberStats, 1)
			nextDone := p.nextUntilEntered(t, func() {
				_ = p.sub.Close()
				stats <- p.sub.Stats()
			})
			st := within(t, stats, "Stats called inside the callback after Close (waiting for its own teardown?) did not return")
			if err := within(t, nextDone, "the Next that ran the callback did not return"); err != nil && !errors.Is(err, middleware.ErrClosed) {
				t.Fatalf("the Next that ran the callback returned %v", err)
			}
			// A transport may count the message when its callback returns.
			if after := p.sub.Stats(); after.Delivered < max(st.Delivered, 1) {
				t.Fatalf("Stats after the teardown: Delivered %d, want ≥ 1 and ≥ the %d seen inside the callback", after.Delivered, st.Delivered)
			}
		})
	}
}
