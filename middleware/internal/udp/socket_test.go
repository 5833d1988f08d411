package udp_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// The Socket is kept out of Go's netpoller, so its blocking calls wait in
// ppoll and rely on eventfds to be woken. These tests pin down that every
// blocked call is released by the event meant to release it.

// blocked runs f in a goroutine and returns a channel with its error.
func blocked(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// within waits for ch up to d (a deadline for a hang, not a timing bound).
func within(t *testing.T, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
		return nil
	}
}

func TestSocketCloseReleasesBlockedCalls(t *testing.T) {
	s := openSock(t, lo)
	buf := make([]byte, 2048)
	read := blocked(func() error { _, _, _, err := s.ReadFrom(buf); return err }) // no deadline: waits for ever
	// ReadDirect's own wait is long; Close must cut it short. A second
	// socket, because one caller at a time may read a socket.
	s2 := openSock(t, lo)
	direct := blocked(func() error { _, _, _, err := s2.ReadDirect(make([]byte, 2048), time.Hour); return err })
	// Give both a chance to reach their ppoll: if they have not, they
	// still must see the close when they get there.
	runtimeYield()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := within(t, read, 5*time.Second, "ReadFrom after Close"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Close: %v, want net.ErrClosed", err)
	}
	if err := within(t, direct, 5*time.Second, "ReadDirect after Close"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadDirect after Close: %v, want net.ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
	if err := s.WriteTo([]byte("x"), s2.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v, want net.ErrClosed", err)
	}
}

func TestSocketDeadlineMovesBlockedRead(t *testing.T) {
	s := openSock(t, lo)
	defer s.Close()
	if err := s.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	read := blocked(func() error { _, _, _, err := s.ReadFrom(make([]byte, 2048)); return err })
	runtimeYield()
	// Pulling the deadline into the past must end the wait now, not in an
	// hour: this is how a consumer takes the socket from the background
	// goroutine.
	if err := s.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := within(t, read, 5*time.Second, "ReadFrom after the deadline moved"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrom: %v, want os.ErrDeadlineExceeded", err)
	}
	// With the deadline cleared, a datagram is read with its source.
	if err := s.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	peer := openSock(t, lo)
	defer peer.Close()
	if err := peer.WriteTo([]byte("hello"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, from, rx, err := s.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "hello" || from != peer.LocalAddr() || rx == 0 {
		t.Fatalf("ReadFrom = %q from %v (rx %d), %v; want \"hello\" from %v with a kernel timestamp", buf[:n], from, rx, err, peer.LocalAddr())
	}
}

func TestSocketReadDirect(t *testing.T) {
	s := openSock(t, lo)
	defer s.Close()
	peer := openSock(t, lo)
	defer peer.Close()
	buf := make([]byte, 2048)
	if n, _, _, err := s.ReadDirect(buf, 0); err == nil || n != 0 {
		t.Fatalf("ReadDirect on an empty socket without waiting = %d, %v; want 0 and an error", n, err)
	}
	got := blocked(func() error {
		n, from, _, err := s.ReadDirect(buf, 10*time.Second)
		if err == nil && (string(buf[:n]) != "ping" || from != peer.LocalAddr()) {
			return errors.New("wrong datagram " + string(buf[:n]) + " from " + from.String())
		}
		return err
	})
	runtimeYield()
	// Sent in two parts (sendmsg, two iovecs): one datagram.
	if err := peer.WriteTo2([]byte("pi"), []byte("ng"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := within(t, got, 5*time.Second, "ReadDirect waiting for a datagram"); err != nil {
		t.Fatal(err)
	}
}

// TestReceiverHandOver: a consumer that stops calling Next hands the
// socket to the background goroutine (which keeps reading), and takes it
// back on its next Next, nothing lost either way.
func TestReceiverHandOver(t *testing.T) {
	r := newRig(t, udp.SenderConfig{TopicID: 5, MaxPayload: 64}, udp.ReceiverConfig{TopicID: 5, MaxPayload: 64}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := make([]byte, 16)
	var got uint64
	next := func() {
		t.Helper()
		if err := r.rcv.Next(ctx, func(d *udp.Delivery) { got = d.Seq }); err != nil {
			t.Fatal(err)
		}
	}
	fill(p, 1)
	if err := r.snd.Send(p); err != nil {
		t.Fatal(err)
	}
	next() // the consumer reads
	if got != 1 {
		t.Fatalf("got seq %d, want 1", got)
	}
	// No Next now: after the consumer's lease the background goroutine
	// must read message 2 by itself (Datagrams counts what was read).
	d0 := r.rcv.Stats().Datagrams
	fill(p, 2)
	if err := r.snd.Send(p); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "background goroutine reads while nobody calls Next", func() bool {
		return r.rcv.Stats().Datagrams > d0
	})
	next() // from the ready queue
	if got != 2 {
		t.Fatalf("got seq %d, want 2", got)
	}
	// Message 3 arrives while the goroutine may hold the socket: Next must
	// take it over and deliver.
	fill(p, 3)
	if err := r.snd.Send(p); err != nil {
		t.Fatal(err)
	}
	next()
	if got != 3 {
		t.Fatalf("got seq %d, want 3", got)
	}
	if st := r.rcv.Stats(); st.Delivered != 3 || st.Lost != 0 {
		t.Fatalf("delivered %d lost %d, want 3 and 0", st.Delivered, st.Lost)
	}
}

// runtimeYield lets a just-started goroutine run up to its blocking call.
// Correctness does not depend on it (each case also holds if the call has
// not blocked yet); it makes the tested path the likely one.
func runtimeYield() {
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}
