package sys_test

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/middleware/bench/internal/sys"
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
