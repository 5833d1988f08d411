package pmc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync/internal/pmc"
	"github.com/hilrig/hilrig/timesync/timesynctest"
)

// fakePTP4L answers management GETs by echoing the request as a RESPONSE
// (CURRENT_DATA_SET requests carry a zeroed TLV, so the echo decodes).
// delay(seq) holds a reply back to simulate a slow daemon.
type fakePTP4L struct {
	path string
	conn *net.UnixConn
	wg   sync.WaitGroup
	// sent receives the sequence number of each reply once it is in the
	// client's socket buffer (unix datagrams are delivered by the write).
	sent chan uint16
}

func startFake(t *testing.T, path string, delay func(seq uint16) time.Duration) *fakePTP4L {
	t.Helper()
	_ = os.Remove(path) // as ptp4l does before bind: a crash leaves the file
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePTP4L{path: path, conn: conn, sent: make(chan uint16, 64)}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			msg := append([]byte(nil), buf[:n]...)
			msg[46] = 2 // actionField: RESPONSE
			seq := uint16(msg[30])<<8 | uint16(msg[31])
			d := delay(seq)
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				time.Sleep(d) // the simulated daemon's slowness, not synchronisation
				if _, err := conn.WriteToUnix(msg, from); err == nil {
					select {
					case f.sent <- seq:
					default: // nobody is waiting for it
					}
				}
			}()
		}
	}()
	return f
}

func (f *fakePTP4L) stop() {
	_ = f.conn.Close()
	f.wg.Wait()
}

// TestLateReplyIsDrainedNotTakenAsTheNextAnswer: the upstream client has
// no timeout and no matching; ours must discard a reply that arrives after
// its request timed out.
func TestLateReplyIsDrainedNotTakenAsTheNextAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	f := startFake(t, path, func(seq uint16) time.Duration {
		if seq == 1 {
			return 300 * time.Millisecond
		}
		return 0
	})
	defer f.stop()
	c, err := pmc.Dial(context.Background(), path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CurrentDataSet(context.Background()); !errors.Is(err, pmc.ErrTimeout) {
		t.Fatalf("first request: %v, want ErrTimeout", err)
	}
	// Wait until the late reply to request 1 is in our socket buffer.
	for late := false; !late; {
		select {
		case seq := <-f.sent:
			late = seq == 1
		case <-time.After(5 * time.Second):
			t.Fatal("the fake never sent the late reply to request 1")
		}
	}
	if _, err := c.CurrentDataSet(context.Background()); err != nil {
		t.Fatalf("second request: %v", err)
	}
	if c.Drained() == 0 {
		t.Error("the late reply to request 1 was not drained")
	}
}

// TestReconnectAfterRestart: ptp4l unlinks and re-binds its socket on
// restart; the client must redial instead of failing forever.
func TestReconnectAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	now := func(uint16) time.Duration { return 0 }
	f := startFake(t, path, now)
	c, err := pmc.Dial(context.Background(), path, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CurrentDataSet(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.stop() // the daemon dies; its socket file stays, as after a crash
	_, err = c.CurrentDataSet(context.Background())
	if !errors.Is(err, pmc.ErrNotListening) && !errors.Is(err, pmc.ErrNoSocket) {
		t.Fatalf("daemon gone: %v, want not-listening/no-socket", err)
	}
	f = startFake(t, path, now)
	defer f.stop()
	if _, err := c.CurrentDataSet(context.Background()); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// within runs f in a goroutine and fails the test if it has not returned
// after d: the code under test may hang forever, and the test must not.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v (hung)", what, d)
	}
}

// TestPTP4LWriteToAFullQueueIsBounded: against a socket that is bound but never
// read, every request ends with ErrTimeout within its deadline — also
// once the peer's queue is full and the write itself would block (the
// 12th request used to hang forever, deaf to ctx and signals).
func TestPTP4LWriteToAFullQueueIsBounded(t *testing.T) {
	path := timesynctest.MuteSocket(t)
	// No deferred Close: on the old code a hung request holds the
	// client's lock, and Close would hang the test too.
	c, err := pmc.Dial(context.Background(), path, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 25; i++ {
		within(t, 5*time.Second, fmt.Sprintf("request %d to a never-read socket", i), func() {
			start := time.Now()
			_, err := c.CurrentDataSet(context.Background())
			if !errors.Is(err, pmc.ErrTimeout) {
				t.Errorf("request %d: err = %v, want ErrTimeout", i, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("request %d: error %q does not name the socket", i, err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("request %d took %v with a 30ms deadline", i, el)
			}
		})
	}
	// A long per-request deadline: ctx alone must end a blocked write.
	c2, err := pmc.Dial(context.Background(), path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	within(t, 5*time.Second, "a request blocked in write with ctx cancelled", func() {
		if _, err := c2.CurrentDataSet(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	})
	_ = c.Close()
	_ = c2.Close()
}

// TestPTP4LDecodeErrorNamesTheSocket: a reply that claims our sequence id but
// does not decode is reported with the socket it came from.
func TestPTP4LDecodeErrorNamesTheSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garbled.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			// The header (with our sequence id at 30:32) and then the
			// message cut short: the TLV cannot decode.
			_, _ = conn.WriteToUnix(buf[:min(n, 40)], from)
		}
	}()
	c, err := pmc.Dial(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CurrentDataSet(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "decode GET CURRENT_DATA_SET reply") {
		t.Fatalf("err = %v, want a decode error naming %s and the request", err, path)
	}
}
