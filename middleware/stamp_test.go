//go:build linux

package middleware_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// Header.SendMono is taken at the entry of Send, before the Reliable
// back-pressure wait and the copy: a slow subscriber that makes Send block
// shows up in RecvMono − SendMono of the message that waited, as it does
// on a scope whose marker is raised just before Send. On the loan path the
// stamp is taken at the entry of Loan.Publish: after the loan and the
// filling, which are the caller's time.
func TestSendStampPrecedesReliableWait(t *testing.T) {
	const slow = 50 * time.Millisecond // how long the subscriber sits on message 1
	for _, tc := range transports[:2] {
		t.Run(tc.name, func(t *testing.T) {
			d := testDomain(t)
			n := openNode(t, "stamp", d)
			c := middleware.Contract{Topic: "stamp", MaxPayload: 64, Slots: 1, Reliability: middleware.Reliable, Transport: tc.tr}
			sub, pub := openPairWith(t, n, c, nil, c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
			entered, sendStarted := make(chan struct{}), make(chan struct{})
			ctx := ctxT(t, 20*time.Second)
			res, errc := receiveStamps(ctx, sub, func(m *middleware.Message) {
				if m.Header.Seq == 1 {
					close(entered)
					<-sendStarted
					time.Sleep(slow) // the slow subscriber: Send 2 waits for this ack
				}
			})
			if err := pub.Send([]byte("one")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-entered:
			case err := <-errc:
				t.Fatalf("subscriber: %v", err)
			case <-ctx.Done():
				t.Fatal("message 1 never reached the callback")
			}
			checkSendStamps(t, pub, sendStarted, "Reliable back-pressure", errc, res)
		})
	}
}

// stampGot is what the subscriber saw of one message: its sequence number,
// Header.SendMono and RecvMono (monotonic ns).
type stampGot struct {
	seq        uint64
	send, recv int64
}

// receiveStamps takes three messages from sub on its own goroutine,
// writing what it saw of each to res and then calling hook (nil for none)
// inside the callback; errc gets the end of the goroutine: nil after the
// third message, or the error of Next.
func receiveStamps(ctx context.Context, sub *middleware.Subscriber, hook func(*middleware.Message)) (res chan stampGot, errc chan error) {
	res, errc = make(chan stampGot, 3), make(chan error, 1)
	go func() {
		for i := 0; i < 3; i++ {
			if err := sub.Next(ctx, func(m *middleware.Message) {
				res <- stampGot{m.Header.Seq, m.Header.SendMono, m.RecvMono}
				if hook != nil {
					hook(m)
				}
			}); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	return res, errc
}

// checkSendStamps drives messages 2 and 3 of a stamp test and checks their
// stamps. Message 1 has been sent and its ack is being withheld until
// release is closed; Send of message 2 must block on that back-pressure
// (what names it) for ≥ 20 ms. Message 3 goes through a loan. errc reports
// the end of the subscriber goroutine, which writes what it saw to res.
func checkSendStamps(t *testing.T, pub *middleware.Publisher, release chan struct{}, what string, errc <-chan error, res chan stampGot) {
	t.Helper()
	before := middleware.MonoNow()
	close(release)
	if err := pub.Send([]byte("two")); err != nil { // blocks until message 1 is acked
		t.Fatal(err)
	}
	after := middleware.MonoNow()
	blocked := pub.Stats().Blocked
	if blocked < 20*time.Millisecond {
		t.Fatalf("Send blocked only %v; the test needs ≥ 20 ms of %s", blocked, what)
	}

	l, err := pub.Loan() // waits for message 2's ack (short)
	if err != nil {
		t.Fatal(err)
	}
	copy(l.Bytes(), "three")
	filled := middleware.MonoNow()
	if err := l.Publish(5); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("subscriber: %v", err)
	}
	close(res)
	var ms []stampGot
	for g := range res {
		ms = append(ms, g)
	}
	if len(ms) != 3 || ms[1].seq != 2 || ms[2].seq != 3 {
		t.Fatalf("delivered %+v", ms)
	}
	m2, m3 := ms[1], ms[2]
	// The stamp lies in [entry of Send, end of Send − blocked]:
	// it was taken before the wait, not after it.
	if m2.send < before || m2.send > after-int64(blocked) {
		t.Errorf("message 2 stamped at +%v into a Send of %v that blocked %v; want before the wait",
			time.Duration(m2.send-before), time.Duration(after-before), blocked)
	}
	if lat := time.Duration(m2.recv - m2.send); lat < blocked {
		t.Errorf("message 2: RecvMono − SendMono = %v < %v blocked in Send", lat, blocked)
	} else {
		t.Logf("Send blocked %v; message 2 one-way %v", blocked, lat)
	}
	if m3.send < filled {
		t.Errorf("message 3 (loan) stamped %v before Publish was called; want at Publish", time.Duration(filled-m3.send))
	}
}
