package leasecli_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report/store/pgtest"
	"github.com/hilrig/hilrig/rig/lease"
)

// TestLeaseLabWide: with a PostgreSQL results store `rack lease` also
// holds the rack's lab-wide lease, for as long as the host lease: a
// second controller host (here: another lease directory) is refused,
// naming the holder, until the first holder's process exits.
func TestLeaseLabWide(t *testing.T) {
	pg := pgtest.Start(t)
	h1, hp1 := startHolder(t)
	_, hp2 := startHolder(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	lease1 := []string{"lease", "-dir", dir1, "-results", pg.DSN(), "-holder", "alice", "-pid", hp1, "lab1"}
	lease2 := []string{"lease", "-dir", dir2, "-results", pg.DSN(), "-holder", "bob", "-pid", hp2, "lab1"}
	if out, err := run(t, lease1...); err != nil {
		t.Fatalf("alice's lease: %q, %v", out, err)
	}
	_, err := run(t, lease2...)
	if !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "held lab-wide by alice (hilrig rack lease)") {
		t.Fatalf("bob's lease on another host while alice holds lab1: %v, want ErrHeld naming alice", err)
	}
	if out, err := run(t, "status", "-dir", dir2, "lab1"); err != nil || !strings.Contains(out, "free") {
		t.Fatalf("bob's host after the refusal: %q, %v; want no lease left there", out, err)
	}
	_ = h1.Process.Kill()
	_ = h1.Wait()
	testkit.Until(t, 30*time.Second, func() error {
		if out, err := run(t, lease2...); err != nil {
			return fmt.Errorf("bob's lease after alice's shell exited: %q, %v", out, err)
		}
		return nil
	})
}
