package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/report/store/pgtest"
)

// TestMain runs a lease controller when TestTwoHostsOneRack starts this
// binary as one.
func TestMain(m *testing.M) {
	if os.Getenv("HILRIG_LEASE_CONTROLLER") != "" {
		os.Exit(leaseController())
	}
	os.Exit(m.Run())
}

// leaseController stands in for a suite on one controller host: on every
// "go" line from stdin it tries to take rack t's lease as the suites do
// (RackLease, with the results store $HILRIG_LEASE_DSN), prints "won" or
// "held: <error>"; once it won it holds the lease until stdin closes.
func leaseController() int {
	rack, err := fixtures.SimRack()
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	rack.Name, rack.File = "t", "t.yaml"
	tc := &TestContext{Suite: "lease", Rack: rack, RunID: os.Getenv("HILRIG_LEASE_RUN"),
		Config: &fixtures.Config{Results: os.Getenv("HILRIG_LEASE_DSN")}}
	in := bufio.NewReader(os.Stdin)
	for {
		if _, err := in.ReadString('\n'); err != nil {
			return 0
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		release, err := tc.RackLease().Lock(ctx, rack.Name)
		cancel()
		if err != nil {
			fmt.Println("held:", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Println("won")
		_, _ = io.Copy(io.Discard, in)
		if err := release(); err != nil {
			return 1
		}
		return 0
	}
}

// startController starts a lease controller in network namespace ns with
// its own host lease directory, as on its own host.
func startController(t *testing.T, ns, user, dsn string) *testkit.Child {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HILRIG_LEASE_CONTROLLER=1", "HILRIG_LEASE_DSN="+dsn,
		"HILRIG_LEASE_DIR="+t.TempDir(), "HILRIG_LEASE_RUN=run-"+user, "USER="+user)
	cmd.Stderr = os.Stderr
	return testkit.StartChild(t, cmd)
}

// ipCmd runs ip(8) with args.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestTwoHostsOneRack (issue 31, finding 4, lab-wide exclusion): with a
// PostgreSQL results store, controllers on two hosts cannot drive one
// rack. Two controllers, each in its own network namespace with its own
// host lease directory (two hosts), reach a real PostgreSQL in a third
// namespace over veth links; the second cannot take rack t while the
// first holds it and can once the first is killed (its session closes,
// its advisory lock goes). Before, the suites' lease was the host's only
// (if any), so the second controller won at once.
func TestTwoHostsOneRack(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("network namespaces: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// db ↔ host1 by a pair; db ↔ host2 by a second veth made here.
	p, err := netns.NewPair(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	host2, err := netns.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host2.Close() })
	third := os.Getpid() % 256
	dbAddr2, host2Addr := fmt.Sprintf("10.236.%d.1", third), fmt.Sprintf("10.236.%d.2", third)
	dbIf, h2If := fmt.Sprintf("hlrdb%d", os.Getpid()%100000), fmt.Sprintf("hlrh2%d", os.Getpid()%100000)
	ipCmd(t, "link", "add", dbIf, "netns", p.A.Name, "type", "veth", "peer", "name", h2If, "netns", host2.Name)
	ipCmd(t, "-n", p.A.Name, "addr", "add", dbAddr2+"/30", "dev", dbIf)
	ipCmd(t, "-n", host2.Name, "addr", "add", host2Addr+"/30", "dev", h2If)
	ipCmd(t, "-n", p.A.Name, "link", "set", dbIf, "up")
	ipCmd(t, "-n", host2.Name, "link", "set", h2If, "up")

	pg := pgtest.StartIn(t, p.A.Name) // stopped before the namespaces go (cleanups run last-in first-out)
	c1 := startController(t, p.B.Name, "host1", pg.DSNAt(p.AAddr.String()))
	c2 := startController(t, host2.Name, "host2", pg.DSNAt(dbAddr2))

	if r := c1.Ask(t, "go"); r != "won" {
		t.Fatalf("first controller: %s", r)
	}
	r := c2.Ask(t, "go")
	if !strings.HasPrefix(r, "held:") || !strings.Contains(r, "held lab-wide by host1") {
		t.Fatalf("second controller on another host while the first holds rack t: %q; want held lab-wide, naming host1", r)
	}
	if err := c1.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c1.Cmd.Wait()
	testkit.Until(t, 30*time.Second, func() error {
		if r := c2.Ask(t, "go"); r != "won" {
			return fmt.Errorf("second controller after the first was killed: %s", r)
		}
		return nil
	})
}
