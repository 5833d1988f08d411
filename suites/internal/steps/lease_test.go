package steps_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/lease"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

// TestOpenTakesTheRackLease (issue 31, finding 4e): a suite opening a rack
// takes the rack's lease and its rig's Close gives it back. Before, the
// suites passed no lease: steps.Open of rack t succeeded while another
// holder had it. The processes of one run (one RunID) share the lease;
// another run is refused, naming the holder.
func TestOpenTakesTheRackLease(t *testing.T) {
	rack := simRack(t, fixtures.DetectSimEnv())
	// A lab rack: the sim rack's boards under another name and file (the
	// embedded sim rack itself needs no lease, its rigs share nothing).
	rack.Name, rack.File = "t", "t.yaml"
	prof, err := rack.Profile("sim-2core")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HILRIG_LEASE_DIR", t.TempDir())
	d := lease.DefaultDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // may build hilrig
	defer cancel()
	other, err := d.Acquire(ctx, lease.Self("t", "other"))
	if err != nil {
		t.Fatal(err)
	}
	tcOf := func(run string) *harness.TestContext {
		return &harness.TestContext{Suite: "test", Rack: rack, Profile: prof, RunID: run,
			Config: &fixtures.Config{Window: 100 * time.Millisecond}}
	}
	env, err := steps.Open(ctx, tcOf("run-a"))
	if err == nil {
		_ = env.Rig.Close()
		t.Fatal("steps.Open of rack t while another holder has its lease succeeded, want lease.ErrHeld")
	}
	if !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "held by other (pid ") {
		t.Fatalf("steps.Open of a leased rack: %v, want lease.ErrHeld naming the holder", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	a1, err := steps.Open(ctx, tcOf("run-a"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Status(ctx, "t")
	if err != nil || !st.Held || st.Stale || st.Group != "run-a" || !strings.Contains(st.Holder, "suite test, run run-a") {
		t.Fatalf("lease while the suite has the rack open: %+v (held %v, stale %v), %v; want held by run-a", st.Info, st.Held, st.Stale, err)
	}
	a2, err := steps.Open(ctx, tcOf("run-a")) // another process of the same run
	if err != nil {
		t.Fatalf("second open by the same run: %v", err)
	}
	if _, err := steps.Open(ctx, tcOf("run-b")); !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "run run-a") {
		t.Fatalf("open by another run while run-a has the rack: %v, want lease.ErrHeld naming run-a", err)
	}
	if err := a1.Rig.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx, "t"); err != nil || !st.Held || st.Stale {
		t.Fatalf("lease after one of two rigs of the run closed: %+v (held %v, stale %v), %v; want still held", st.Info, st.Held, st.Stale, err)
	}
	if err := a2.Rig.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx, "t"); err != nil || st.Held {
		t.Fatalf("lease after the run's rigs closed: %+v (held %v), %v; want free", st.Info, st.Held, err)
	}
}
