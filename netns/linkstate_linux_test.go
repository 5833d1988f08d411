package netns_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/linkstate"
	"github.com/hilrig/hilrig/netns"
)

// TestAwaitRunning, against the kernel: a veth end with an address, up,
// whose other end is still down has no carrier and is not running, so
// AwaitAddr gives up at ctx's end naming the address, the interface and
// why; once the other end comes up it returns that interface. An address
// nowhere, and an interface that is down, are named as such.
func TestAwaitRunning(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	a, err := netns.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := netns.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	id := os.Getpid() % 100000
	devA, devB := fmt.Sprintf("hlsA%d", id), fmt.Sprintf("hlsB%d", id)
	addr := netip.MustParseAddr(fmt.Sprintf("10.254.%d.1", 1+id%250))
	ipCmd(t, "link", "add", devA, "netns", a.Name, "type", "veth", "peer", "name", devB, "netns", b.Name)
	ipCmd(t, "-n", a.Name, "addr", "add", addr.String()+"/24", "dev", devA)

	inA := func(fn func() error) error { return a.Do(fn) }

	// Down: named as down.
	err = inA(func() error {
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := linkstate.AwaitName(c, devA)
		return err
	})
	if !errors.Is(err, linkstate.ErrNotRunning) || !strings.Contains(err.Error(), devA+" is down") {
		t.Errorf("AwaitName on a down interface: %v, want ErrNotRunning saying %s is down", err, devA)
	}

	// Up, other end down: no carrier.
	ipCmd(t, "-n", a.Name, "link", "set", devA, "up")
	err = inA(func() error {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := linkstate.AwaitAddr(c, addr)
		return err
	})
	if !errors.Is(err, linkstate.ErrNotRunning) || !strings.Contains(err.Error(), addr.String()+" is on "+devA) || !strings.Contains(err.Error(), "no carrier") {
		t.Errorf("AwaitAddr with the other end down: %v, want ErrNotRunning naming %s on %s and no carrier", err, addr, devA)
	}

	// Nowhere.
	nowhere := netip.MustParseAddr("192.0.2.77")
	err = inA(func() error {
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := linkstate.AwaitAddr(c, nowhere)
		return err
	})
	if !errors.Is(err, linkstate.ErrNotRunning) || !strings.Contains(err.Error(), "192.0.2.77 is on no interface") || !strings.Contains(err.Error(), devA+" "+addr.String()) {
		t.Errorf("AwaitAddr of an address nowhere: %v, want it named as on no interface, listing %s %s", err, devA, addr)
	}

	// The other end comes up while AwaitAddr waits: it returns devA.
	got := make(chan error, 1)
	waiting := make(chan struct{})
	go func() {
		got <- inA(func() error {
			c, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			close(waiting)
			ifc, err := linkstate.AwaitAddr(c, addr)
			if err == nil && ifc.Name != devA {
				err = fmt.Errorf("returned interface %s, want %s", ifc.Name, devA)
			}
			return err
		})
	}()
	<-waiting
	ipCmd(t, "-n", b.Name, "link", "set", devB, "up")
	if err := <-got; err != nil {
		t.Errorf("AwaitAddr after the other end came up: %v", err)
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
