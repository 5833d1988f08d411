package pmc_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync/internal/pmc"
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
