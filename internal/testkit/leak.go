package testkit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests of a package and then fails the binary when
// goroutines started by the tests are still running two seconds after the
// last test ended (every goroutine must have an owner that waits for it).
// Runtime and test-framework goroutines (signal handling, the fuzzing
// engine) are not counted. Use it as
// `func TestMain(m *testing.M) { testkit.Main(m) }`.
func Main(m *testing.M) { MainWith(m, nil) }

// MainWith is Main with a set-up run before the tests (nil: none); its
// teardown runs after them, before goroutines are counted. A set-up error
// ends the binary with status 2.
func MainWith(m *testing.M, setup func() (teardown func(), err error)) {
	teardown := func() {}
	if setup != nil {
		td, err := setup()
		if err != nil {
			fmt.Fprintln(os.Stderr, "testkit: set-up:", err)
			os.Exit(2)
		}
		teardown = td
	}
	base := len(goroutines())
	code := m.Run()
	teardown()
	if code == 0 {
		if g := settle(base, 2*time.Second); len(g) > base {
			fmt.Fprintf(os.Stderr, "testkit: %d goroutines leaked (had %d before the tests):\n%s\n",
				len(g)-base, base, strings.Join(g, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// settle polls until at most base goroutines remain or d passes, and
// returns the last count's stacks.
func settle(base int, d time.Duration) []string {
	end := time.Now().Add(d)
	for {
		g := goroutines()
		if len(g) <= base || time.Now().After(end) {
			return g
		}
		time.Sleep(PollInterval)
	}
}

// goroutines returns the stacks of goroutines other than the caller's and
// the runtime's and test framework's own.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 || strings.Contains(g, "os/signal.") || strings.Contains(g, "testing.(*F)") ||
			strings.Contains(g, "internal/fuzz.") || strings.Contains(g, "testing.runFuzzing") {
			continue // i == 0 is the calling goroutine
		}
		out = append(out, g)
	}
	return out
}
