package testkit

import (
	"strings"
	"testing"
	"time"
)

// settle sees a goroutine that nobody stops, names it by its stack, and
// returns as soon as a finished one is gone.
func TestSettleSeesLeakedGoroutine(t *testing.T) {
	base := len(goroutines())
	stop := make(chan struct{})
	go leakyForTest(stop)
	g := settle(base, 20*time.Millisecond)
	if len(g) != base+1 || !strings.Contains(strings.Join(g, "\n"), "leakyForTest") {
		t.Fatalf("settle: %d goroutines (base %d), want the leaked one:\n%s", len(g), base, strings.Join(g, "\n\n"))
	}
	close(stop)
	if g := settle(base, 5*time.Second); len(g) > base {
		t.Fatalf("after stop, settle still sees %d goroutines (base %d)", len(g), base)
	}
}

func leakyForTest(stop chan struct{}) { <-stop }
