package futex_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/futex"
)

func TestWaitWake(t *testing.T) {
	var word uint32
	woke := make(chan struct{})
	go func() {
		for atomic.LoadUint32(&word) == 0 {
			if err := futex.Wait(&word, 0, time.Second); err != nil {
				t.Error(err)
				break
			}
		}
		close(woke)
	}()
	atomic.StoreUint32(&word, 1)
	if _, err := futex.Wake(&word, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
}

func TestWaitValueMismatchReturns(t *testing.T) {
	var word uint32 = 7
	start := time.Now()
	if err := futex.Wait(&word, 3, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Wait with mismatched value slept %v", d)
	}
}

func TestWaitTimeout(t *testing.T) {
	var word uint32
	start := time.Now()
	if err := futex.Wait(&word, 0, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 10*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its timeout", d)
	}
}
