package rig_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/rig/lease"
)

// TestOpenTakesTheRackLease: a second controller opening a leased rack
// fails before setting anything up, naming the holder; Close frees it.
func TestOpenTakesTheRackLease(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := &lease.Dir{Path: t.TempDir()}
	opts := &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache}, Lease: rig.HostLeases{Dir: dir, Holder: "first"}}
	r, err := rig.Open(ctx, rack, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder in the same process: its own Acquire, its own open
	// file description, which sees the first one's lock as a live holder.
	_, err = rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, Lease: rig.HostLeases{Dir: dir, Holder: "second"}})
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second Open of a leased rack: %v, want ErrHeld", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := dir.Status(ctx, rack.Name)
	if err != nil || st.Held {
		t.Fatalf("after Close: %+v, %v", st, err)
	}
}
