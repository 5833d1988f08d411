//go:build linux

package udp

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware/internal/rt"
	"golang.org/x/sys/unix"
)

// A dedicated wait (SocketConfig.DedicatedWait) blocks in a raw recvmsg
// that keeps its P. These tests hold it to its two promises: the rest of
// the process keeps a P, and a garbage collection's stop-the-world does
// not wait for a datagram.

func openDedicated(t *testing.T) *Socket {
	t.Helper()
	s, err := Open(SocketConfig{Listen: netip.AddrPortFrom(loAddr, 0), DedicatedWait: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDedicatedWaitLetsTheWorldStop(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	s := openDedicated(t)
	// An hour's receive timeout: only the preemption signal can end the
	// wait in time (the receive timeout is what makes the kernel end a
	// socket call with EINTR instead of restarting it).
	tv := unix.NsecToTimeval(int64(time.Hour))
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	type read struct {
		n   int
		err error
	}
	got := make(chan read, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b := make([]byte, MaxDatagram+1)
		n, _, _, err := s.ReadDirect(b, 2*time.Hour)
		got <- read{n, err}
	}()
	testkit.Eventually(t, 5*time.Second, "the receive waits holding its P", func() bool { return rt.Held() == 1 })
	gc := make(chan struct{})
	go func() { runtime.GC(); close(gc) }()
	select {
	case <-gc:
	case <-time.After(10 * time.Second):
		t.Fatal("a garbage collection still waits for a dedicated receive after 10 s")
	}
	// The wait resumed after the collection and still receives.
	c := openLo(t, nil)
	if err := c.WriteTo([]byte("after the collection"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || r.n != len("after the collection") {
			t.Fatalf("read after the collection: %d bytes, %v", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dedicated receive did not return the datagram sent after the collection")
	}
	// Close ends a dedicated wait too.
	go func() {
		_, _, _, err := s.ReadDirect(make([]byte, MaxDatagram+1), 2*time.Hour)
		got <- read{0, err}
	}()
	testkit.Eventually(t, 5*time.Second, "the second receive waits holding its P", func() bool { return rt.Held() == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("dedicated receive after Close: %v, want net.ErrClosed", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a dedicated receive")
	}
	if n := rt.Held(); n != 0 {
		t.Errorf("%d Ps still held after the waits ended", n)
	}
}
