//go:build linux

package middleware_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// testDomain returns a fresh domain for t and registers a check, run
// after every other cleanup, that no segment of it is left in /dev/shm.
func testDomain(t testing.TB) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	d := "t" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		left, _ := filepath.Glob("/dev/shm/hilrig." + d + ".*")
		if len(left) > 0 {
			t.Errorf("segments left behind: %v", left)
			for _, f := range left {
				middleware.RemoveSegment(f)
			}
		}
	})
	return d
}

func openNode(t testing.TB, name, domain string) *middleware.Node {
	t.Helper()
	n, err := middleware.OpenNode(name, &middleware.NodeOptions{Domain: domain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// openPair opens a subscriber and then a publisher on c in n, both with
// default options, failing the test on an error; Node.Close closes them.
func openPair(t testing.TB, n *middleware.Node, c middleware.Contract) (*middleware.Subscriber, *middleware.Publisher) {
	t.Helper()
	return openPairWith(t, n, c, nil, c, nil)
}

// openPub opens a publisher on c in n with options po, failing the test
// on an error; Node.Close closes it.
func openPub(t testing.TB, n *middleware.Node, c middleware.Contract, po *middleware.PublisherOptions) *middleware.Publisher {
	t.Helper()
	pub, err := n.NewPublisher(c, po)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// openPairWith is openPair with the subscriber's and the publisher's own
// contract and options (the publisher's contract may name the
// subscriber's address, known only once it is open).
func openPairWith(t testing.TB, n *middleware.Node, sc middleware.Contract, so *middleware.SubscriberOptions, pc middleware.Contract, po *middleware.PublisherOptions) (*middleware.Subscriber, *middleware.Publisher) {
	t.Helper()
	sub, err := n.NewSubscriber(sc, so)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := n.NewPublisher(pc, po)
	if err != nil {
		t.Fatal(err)
	}
	return sub, pub
}

// collectGarbage runs garbage collections back to back on another
// goroutine until the test ends; the returned func says how many have
// finished. Tests of waits that hold their P use it: a collection's
// stop-the-world that waited for such a wait would hang them.
func collectGarbage(t testing.TB) func() int64 {
	stop, stopped := make(chan struct{}), make(chan struct{})
	var gcs atomic.Int64
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				gcs.Add(1)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
	return gcs.Load
}

// expectIdleDeadline checks that Next on a topic nobody publishes on ends
// with the context's deadline.
func expectIdleDeadline(t testing.TB, sub *middleware.Subscriber) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := sub.Next(ctx, func(*middleware.Message) {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on an idle topic returned %v, want DeadlineExceeded", err)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// sendTake sends payload on pub and takes the next message on sub with
// fn, failing tb on either error. It allocates nothing itself, so an
// AllocsPerRun of it measures the bus.
func sendTake(tb testing.TB, pub *middleware.Publisher, sub *middleware.Subscriber, payload []byte, fn func(*middleware.Message)) {
	if err := pub.Send(payload); err != nil {
		tb.Fatal(err)
	}
	if err := sub.Next(context.Background(), fn); err != nil {
		tb.Fatal(err)
	}
}
