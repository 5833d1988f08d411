//go:build iceoryx

package iceoryx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hilrig/hilrig/peers/iceoryx/roudi"
)

// TestOpenWithoutRouDi: Open without a running RouDi (and not allowed to
// start one) fails at once with roudi.ErrNoRouDi instead of blocking in
// iox_runtime_init, which waits for RouDi forever.
func TestOpenWithoutRouDi(t *testing.T) {
	// Holding the starters' lock keeps another test binary from starting
	// a RouDi between the check and Open.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	release, err := roudi.Exclusive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if up, err := roudi.Running(); err != nil || up {
		t.Skipf("a RouDi runs on this host (%v)", err)
	}
	if _, err := Open(context.Background(), Config{App: "t"}); !errors.Is(err, roudi.ErrNoRouDi) {
		t.Fatalf("Open without a RouDi: %v, want ErrNoRouDi", err)
	}
}

// TestCloseDoesNotWaitForRouDiToGiveUp: closing a peer that started its
// RouDi, with this process's runtime registered, returns once RouDi has
// asked this process to terminate — not after the bound on RouDi's
// shutdown. RouDi then only waits (its kill delay, 45 s) for this
// process, which exits after Close: before, Stop always ran into its 5 s
// bound, so an agent with an iceoryx peer said bye after the rig's 5 s
// StopTimeout and was killed. The grace here is 10 minutes, so a Stop that
// waits for it fails the 60 s bound below.
func TestCloseDoesNotWaitForRouDiToGiveUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if up, err := roudi.Running(); err != nil || up {
		t.Skipf("a RouDi runs on this host (%v)", err)
	}
	p, err := Open(ctx, Config{App: "closetest", StartRouDi: true, MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if p.roudi == nil {
		t.Skip("another test binary's RouDi appeared meanwhile")
	}
	if _, err := p.NewWriter("hilrig/closetest", false, 4, 64); err != nil {
		t.Fatal(err)
	}
	Shutdown()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.roudi.StopWithin(10 * time.Minute) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("RouDi stopped in %v", time.Since(start))
	case <-time.After(time.Minute):
		t.Fatal("RouDi not stopped within 60 s of SIGTERM: Stop waits for RouDi's grace while RouDi waits for this process")
	}
	if up, _ := roudi.Running(); up {
		t.Fatal("RouDi still holds its lock after Stop")
	}
}
