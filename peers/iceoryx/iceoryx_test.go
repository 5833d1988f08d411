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
