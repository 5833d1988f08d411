package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report/store/pgtest"
	"github.com/hilrig/hilrig/report/store/postgres"
)

// TestRackLeasesGroupAndRelease: the lab-wide lease on a real PostgreSQL.
// Holders of one group share the rack; another group is refused with a
// *HeldError naming the holder while any member holds it, and gets it
// once the last member released.
func TestRackLeasesGroupAndRelease(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	in := func(holder, group string) postgres.RackLeases {
		return postgres.RackLeases{DSN: pg.DSN(), Holder: holder, Group: group}
	}
	r1, err := in("alice", "run1").Lock(ctx, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := in("alice2", "run1").Lock(ctx, "lab1")
	if err != nil {
		t.Fatalf("second member of run1: %v", err)
	}
	r4, err := in("other", "").Lock(ctx, "lab2")
	if err != nil {
		t.Fatalf("another rack: %v", err)
	}
	defer func() {
		if err := r4(); err != nil {
			t.Error(err)
		}
	}()
	var he *postgres.HeldError
	if _, err := in("bob", "run2").Lock(ctx, "lab1"); !errors.Is(err, postgres.ErrRackHeld) || !errors.As(err, &he) || !strings.HasPrefix(he.By, "alice (pid ") {
		t.Fatalf("run2 while run1 holds lab1: %v, want a HeldError naming alice", err)
	}
	if err := r1(); err != nil {
		t.Fatal(err)
	}
	if _, err := in("bob", "run2").Lock(ctx, "lab1"); !errors.Is(err, postgres.ErrRackHeld) {
		t.Fatalf("run2 while a member of run1 holds lab1: %v, want ErrRackHeld", err)
	}
	if err := r2(); err != nil {
		t.Fatal(err)
	}
	r3, err := in("bob", "run2").Lock(ctx, "lab1")
	if err != nil {
		t.Fatalf("run2 after run1 released: %v", err)
	}
	if err := r3(); err != nil {
		t.Fatal(err)
	}
	if err := r3(); err != nil {
		t.Fatalf("second release: %v, want nil (idempotent)", err)
	}
}
