package testkit_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runRecorded(t *testing.T, fn func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.msg
}

func TestUntilReturnsOnceCheckPasses(t *testing.T) {
	var n atomic.Int32
	msg := runRecorded(t, func(tb testing.TB) {
		testkit.Until(tb, 5*time.Second, func() error {
			if n.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	})
	if msg != "" || n.Load() != 3 {
		t.Fatalf("Until: %d checks, failure %q; want 3 checks, no failure", n.Load(), msg)
	}
}

func TestUntilFailsWithLastError(t *testing.T) {
	var n atomic.Int32
	start := time.Now()
	msg := runRecorded(t, func(tb testing.TB) {
		testkit.Until(tb, 20*time.Millisecond, func() error { return fmt.Errorf("saw %d edges", n.Add(1)) })
	})
	if !strings.Contains(msg, fmt.Sprintf("saw %d edges", n.Load())) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Until failed with %q after %v; want the last error after ≥ 20ms", msg, time.Since(start))
	}
}

func TestEventuallyNamesWhatItWaitedFor(t *testing.T) {
	msg := runRecorded(t, func(tb testing.TB) {
		testkit.Eventually(tb, 10*time.Millisecond, "the subscriber", func() bool { return false })
	})
	if !strings.Contains(msg, "waiting for the subscriber") {
		t.Fatalf("Eventually failed with %q", msg)
	}
}
