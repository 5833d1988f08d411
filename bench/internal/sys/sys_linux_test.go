package sys_test

import (
	"bytes"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/bench/internal/sys"
)

func TestFutexWaitWake(t *testing.T) {
	f, err := sys.ShmFile(os.TempDir(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
		t.Fatalf("ShmFile left %s linked: %v", f.Name(), err)
	}
	mem, err := sys.Map(f, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Unmap(mem)
	w := sys.NewFutex((*uint32)(unsafe.Pointer(&mem[0])), 20*time.Millisecond)
	// The word differs from old: Wait returns at once.
	if err := w.Wait(7); err != nil {
		t.Fatalf("wait on changed word: %v", err)
	}
	// Nobody wakes: timeout.
	if err := w.Wait(0); err != sys.ErrTimeout {
		t.Fatalf("wait without wake: %v, want ErrTimeout", err)
	}
	// A waker releases a sleeper.
	long := sys.NewFutex((*uint32)(unsafe.Pointer(&mem[0])), 10*time.Second)
	var woke atomic.Bool
	done := make(chan error, 1)
	go func() {
		for long.Load() == 0 {
			if err := long.Wait(0); err != nil {
				done <- err
				return
			}
		}
		woke.Store(true)
		done <- nil
	}()
	w.Store(1)
	if err := w.Wake(1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !woke.Load() {
			t.Fatalf("sleeper: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sleeper not woken within 5 s")
	}
}

func TestPinThread(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	p, err := sys.PinThread(cpu)
	if err != nil {
		t.Fatal(err)
	}
	if got := sys.CurrentCPU(); got != cpu {
		t.Errorf("running on CPU %d after pinning to %d", got, cpu)
	}
	p.Release()
	if _, err := sys.PinThread(runtime.NumCPU()); err == nil {
		t.Fatal("pinning to a CPU that does not exist succeeded")
	}
}

func TestUDPTimeout(t *testing.T) {
	s, err := sys.ListenUDP([4]byte{127, 0, 0, 1}, 0, 1<<16, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	port, err := s.LocalPort()
	if err != nil || port == 0 {
		t.Fatalf("port %d: %v", port, err)
	}
	if err := s.Connect([4]byte{127, 0, 0, 1}, port); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 16)); err != sys.ErrTimeout {
		t.Fatalf("read on idle socket: %v, want ErrTimeout", err)
	}
	if _, err := s.Write([]byte("hello, self")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, err := s.Read(b)
	if err != nil || string(b[:n]) != "hello, self" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
}

// TestUDPWriteSegs: one WriteSegs is the datagrams one Write each would
// send: a UDP_GRO socket reads the run whole (payloads joined in order),
// a plain one reads each datagram; bad runs are refused; 0 allocs.
func TestUDPWriteSegs(t *testing.T) {
	pair := func(gro bool) (snd, rcv *sys.UDPSocket) {
		t.Helper()
		lo := [4]byte{127, 0, 0, 1}
		var err error
		if rcv, err = sys.ListenUDP(lo, 0, 1<<20, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rcv.Close() })
		if snd, err = sys.ListenUDP(lo, 0, 1<<20, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snd.Close() })
		port, err := rcv.LocalPort()
		if err != nil {
			t.Fatal(err)
		}
		if err := snd.Connect(lo, port); err != nil {
			t.Fatal(err)
		}
		if gro {
			if err := rcv.EnableGRO(); err != nil {
				t.Fatal(err)
			}
		}
		return snd, rcv
	}
	msg := make([]byte, 9500) // nine 1000 B segments and a 500 B one
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	buf := make([]byte, 65536)

	snd, rcv := pair(true)
	if n, err := snd.WriteSegs(msg, 1000); err != nil || n != len(msg) {
		t.Fatalf("WriteSegs: %d, %v", n, err)
	}
	n, err := rcv.Read(buf)
	if err != nil || n != len(msg) || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("GRO read: %d bytes (want the run's %d, joined in order), %v", n, len(msg), err)
	}

	snd, rcv = pair(false)
	if _, err := snd.WriteSegs(msg, 1000); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		want := msg[i*1000 : min(i*1000+1000, len(msg))]
		n, err := rcv.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("datagram %d: %d bytes, %v; want %d bytes", i, n, err, len(want))
		}
	}

	for _, bad := range []struct {
		n, seg int
	}{{0, 1000}, {1000, 0}, {65508, 32754}, {65 * 100, 100}} {
		if _, err := snd.WriteSegs(make([]byte, bad.n), bad.seg); err == nil {
			t.Errorf("WriteSegs of %d bytes in %d-byte segments succeeded", bad.n, bad.seg)
		}
	}

	snd, rcv = pair(true)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := snd.WriteSegs(msg, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := rcv.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("WriteSegs + Read: %.1f allocs, want 0", a)
	}
}
