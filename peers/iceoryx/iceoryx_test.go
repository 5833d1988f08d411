//go:build iceoryx

package iceoryx

import (
	"context"
	"errors"
	"testing"

	"github.com/hilrig/hilrig/peers/iceoryx/roudi"
)

// TestOpenWithoutRouDi: Open without a running RouDi (and not allowed to
// start one) fails at once with roudi.ErrNoRouDi instead of blocking in
// iox_runtime_init, which waits for RouDi forever.
func TestOpenWithoutRouDi(t *testing.T) {
	if up, err := roudi.Running(); err != nil || up {
		t.Skipf("a RouDi runs on this host (%v)", err)
	}
	if _, err := Open(context.Background(), Config{App: "t"}); !errors.Is(err, roudi.ErrNoRouDi) {
		t.Fatalf("Open without a RouDi: %v, want ErrNoRouDi", err)
	}
}
