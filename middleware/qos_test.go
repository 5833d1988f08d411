//go:build linux

package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Best effort keep-last: a subscriber that falls behind gets the newest
// Depth messages and counts exactly the ones it missed.
func TestBestEffortCountsExactLoss(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "be", d)
			c := middleware.Contract{Topic: "be/loss", MaxPayload: 16, Depth: 4, Slots: 6, Transport: tc.tr}
			sub, pub := openPair(t, n, c)
			ctx := ctxT(t, 10*time.Second)
			send := func(from, to int) {
				for i := from; i <= to; i++ {
					if err := pub.Send(fmt.Appendf(nil, "%d", i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			recv := func() (seq, lost uint64, body string) {
				if err := sub.Next(ctx, func(m *middleware.Message) { seq, lost, body = m.Header.Seq, m.Lost, string(m.Payload) }); err != nil {
					t.Fatal(err)
				}
				return
			}
			send(1, 10) // never blocks: best effort
			for i, want := range []uint64{7, 8, 9, 10} {
				seq, lost, body := recv()
				wantLost := uint64(0)
				if i == 0 {
					wantLost = 6
				}
				if seq != want || lost != wantLost || body != fmt.Sprint(want) {
					t.Fatalf("got seq %d lost %d body %q, want seq %d lost %d", seq, lost, body, want, wantLost)
				}
			}
			send(11, 13)
			for want := uint64(11); want <= 13; want++ {
				if seq, lost, _ := recv(); seq != want || lost != 0 {
					t.Fatalf("got seq %d lost %d, want %d lost 0", seq, lost, want)
				}
			}
			send(14, 100)
			if seq, lost, _ := recv(); seq != 97 || lost != 83 {
				t.Fatalf("got seq %d lost %d, want 97 lost 83", seq, lost)
			}
			st := sub.Stats()
			if st.Lost != 89 || st.Overruns != 2 || st.Delivered != 8 {
				t.Fatalf("stats %+v, want Lost 89 Overruns 2 Delivered 8", st)
			}
		})
	}
}

// Reliable: a slow subscriber makes the publisher wait, never lose.
func TestReliableSlowSubscriberNeverLoses(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "rel", d)
			c := middleware.Contract{Topic: "rel/slow", MaxPayload: 64, Slots: 2, Reliability: middleware.Reliable, Transport: tc.tr}
			sub, pub := openPairWith(t, n, c, &middleware.SubscriberOptions{Wait: middleware.WaitHybrid}, c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
			const count = 3000
			errc := make(chan error, 1)
			go func() {
				ctx := ctxT(t, 20*time.Second)
				want := uint64(1)
				errc <- sub.Receive(ctx, func(m *middleware.Message) error {
					if m.Header.Seq != want || m.Lost != 0 || string(m.Payload) != fmt.Sprint(want) {
						return fmt.Errorf("got seq %d lost %d %q, want %d", m.Header.Seq, m.Lost, m.Payload, want)
					}
					if want%16 == 0 { // slow: give the publisher time to fill the ring
						until := time.Now().Add(200 * time.Microsecond)
						for time.Now().Before(until) {
						}
					}
					if want == count {
						return errDone
					}
					want++
					return nil
				})
			}()
			for i := 1; i <= count; i++ {
				if err := pub.Send(fmt.Appendf(nil, "%d", i)); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			if err := <-errc; err != errDone {
				t.Fatal(err)
			}
			if st := sub.Stats(); st.Lost != 0 || st.Delivered != count {
				t.Fatalf("subscriber stats %+v", st)
			}
			if st := pub.Stats(); st.Blocked == 0 || st.Published != count {
				t.Fatalf("publisher stats %+v: never blocked — the subscriber was not slow, test proves nothing", st)
			}
		})
	}
}

var errDone = errors.New("done")

func TestWaitStrategies(t *testing.T) {
	for _, w := range []middleware.WaitStrategy{middleware.WaitFutex, middleware.WaitSpin, middleware.WaitHybrid} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "w", d)
			c := middleware.Contract{Topic: "w", MaxPayload: 8, Reliability: middleware.Reliable}
			sub, pub := openPairWith(t, n, c, &middleware.SubscriberOptions{Wait: w, SpinFor: 20 * time.Microsecond}, c, nil)
			var wg sync.WaitGroup
			wg.Add(1)
			got := 0
			go func() {
				defer wg.Done()
				ctx := ctxT(t, 10*time.Second)
				for got < 200 {
					if err := sub.Next(ctx, func(*middleware.Message) { got++ }); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			for i := 0; i < 200; i++ {
				if err := pub.Send([]byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if got != 200 {
				t.Fatalf("got %d", got)
			}
		})
	}
}

// Close from another goroutine and ctx cancellation end a blocked
// Receive promptly.
func TestCloseAndCancelUnblock(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "c", d)
	c := middleware.Contract{Topic: "idle", MaxPayload: 8}
	sub, err := n.NewSubscriber(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sub.Receive(ctx, func(*middleware.Message) error { return nil }) }()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Receive after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after cancel")
	}
	go func() { errc <- sub.Receive(context.Background(), func(*middleware.Message) error { return nil }) }()
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, middleware.ErrClosed) {
			t.Fatalf("Receive after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after Close")
	}
	if err := sub.Next(context.Background(), func(*middleware.Message) {}); !errors.Is(err, middleware.ErrClosed) {
		t.Fatalf("Next on closed subscriber: %v", err)
	}
}

func TestOnePublisherPerTopicAndContractMismatch(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "x", d)
	c := middleware.Contract{Topic: "one", MaxPayload: 8, Transport: middleware.TransportShm}
	p1, err := n.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.NewPublisher(c, nil); !errors.Is(err, middleware.ErrBusy) {
		t.Fatalf("second live publisher: %v, want ErrBusy", err)
	}
	c2 := c
	c2.MaxPayload = 16
	_, err = n.NewSubscriber(c2, nil)
	if !errors.Is(err, middleware.ErrContract) || !strings.Contains(err.Error(), "max payload 8, contract says 16") {
		t.Fatalf("mismatched contract: %v", err)
	}
	p1.Close()
	p2, err := n.NewPublisher(c, nil)
	if err != nil {
		t.Fatalf("publisher after the first closed: %v", err)
	}
	p2.Close()
	for _, bad := range []middleware.Contract{{Topic: "", MaxPayload: 8}, {Topic: "a b", MaxPayload: 8}, {Topic: "t", MaxPayload: 0}, {Topic: "t", MaxPayload: 8, Depth: 5, Slots: 2}} {
		if _, err := n.NewPublisher(bad, nil); !errors.Is(err, middleware.ErrContract) {
			t.Errorf("contract %+v: %v, want ErrContract", bad, err)
		}
	}
	if _, err := middleware.OpenNode("bad", &middleware.NodeOptions{Domain: "a.b"}); !errors.Is(err, middleware.ErrContract) {
		t.Errorf("domain with a dot: %v", err)
	}
}

func TestSegmentPermissions(t *testing.T) {
	d := testDomain(t)
	n := openNode(t, "perm", d)
	c := middleware.Contract{Topic: "perm", MaxPayload: 8, Transport: middleware.TransportShm}
	openPub(t, n, c, nil) // creates the segment; Node.Close closes it
	path := middleware.SegmentPath("", d, c.Topic)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("segment mode %v, want 0600", fi.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		t.Skip("foreign-owner check needs root to chown")
	}
	if err := os.Chown(path, 4242, -1); err != nil {
		t.Fatal(err)
	}
	// Our own process shares its mapping; another process opens the file.
	_, out := helperCmd(t, "open", helperEnvFor(d, c, 0)...)
	line, _ := out.ReadString('\n')
	if !strings.Contains(line, "middleware: permission denied") || !strings.Contains(line, "owned by uid 4242") || !strings.Contains(line, path) {
		t.Fatalf("foreign-owned segment opened by another process: %q", line)
	}
}
