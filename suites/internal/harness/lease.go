package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/store/postgres"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/rig/lease"
)

// DefaultLeaseWait is TestContext.LeaseWait's default: how long a suite
// waits for a rack another run holds before it fails naming the holder.
const DefaultLeaseWait = 2 * time.Minute

// RackLease is the lease the suites take whenever they open the rack
// (rig.Options.Lease; rig.Close releases it): the controller host's lease
// ($HILRIG_LEASE_DIR, package rig/lease) and, when the results store is
// PostgreSQL, the lab-wide lease in it (postgres.RackLeases), so
// controllers on two hosts cannot drive one rack. Every process of one
// run (suite binaries of one `ginkgo -r`, Ginkgo's parallel processes)
// shares it: its group is the run ID. A held lease is waited for up to
// tc.LeaseWait.
//
// nil for the embedded sim rack: everything a sim rig makes (namespaces,
// sim chips, the scope simulator, shared memory) is private to its rig's
// domain, so runs on it never share a resource and need not exclude each
// other (the package tests and the suites of several runs open it at
// once).
func (tc *TestContext) RackLease() rig.RackLocker {
	if tc.Rack == nil || tc.Rack.File == fixtures.SimRackFile {
		return nil
	}
	holder := os.Getenv("USER")
	if holder == "" {
		holder = "uid " + strconv.Itoa(os.Geteuid())
	}
	holder += " (suite " + tc.Suite + ", run " + tc.RunID + ")"
	ls := rig.Leases{rig.HostLeases{Holder: holder, Group: tc.RunID, Wait: tc.LeaseWait}}
	if dsn := tc.resultsDSN(); strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		ls = append(ls, labLease{postgres.RackLeases{DSN: dsn, Holder: holder, Group: tc.RunID, Logger: tc.Log}, tc.LeaseWait})
	}
	return ls
}

// labLease waits up to wait for the lab-wide lease, as rig.HostLeases does
// for the host's, and reports a held rack as lease.ErrHeld, the one
// sentinel rig.Open's callers branch on.
type labLease struct {
	p    postgres.RackLeases
	wait time.Duration
}

func (l labLease) Lock(ctx context.Context, rack string) (func() error, error) {
	var release func() error
	err := lease.WaitHeld(ctx, l.wait, func() (err error) {
		release, err = l.p.Lock(ctx, rack)
		if errors.Is(err, postgres.ErrRackHeld) {
			err = fmt.Errorf("%w: %w", lease.ErrHeld, err)
		}
		return err
	})
	return release, err
}
