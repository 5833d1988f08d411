package rig_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig"
)

// TestVMPairUDP1k opens the example VM rack (two QEMU boards on one
// virtio-net segment), runs 1,000 reliable UDP messages from vm-a to vm-b
// and requires every one delivered, then checks that Close reaped both
// boards. Needs qemu-system-x86_64 and the board image (built on first
// use, minutes; cached after): run with HILRIG_VM=1.
func TestVMPairUDP1k(t *testing.T) {
	if os.Getenv("HILRIG_VM") != "1" {
		t.Skip("VM rack test: set HILRIG_VM=1 to boot two QEMU boards (needs qemu-system-x86, linux-source-6.1, busybox-static; the first run builds the kernel)")
	}
	rack, err := fixtures.LoadRack("../fixtures/examples/vm-pair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache}, StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = r.Close()
		}
	})
	var agents []*rig.Agent
	for _, b := range []string{"vm-a", "vm-b"} {
		a, err := r.Agent(ctx, b)
		if err != nil {
			t.Fatalf("agent on %s: %v", b, err)
		}
		t.Logf("%s: %s (%s)", b, a.Where(), a.Hello.Agent)
		agents = append(agents, a)
	}
	const n = 1000
	spec := rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-udp", Payload: 64, Count: n, RateHz: 500, Markers: true}, Drain: 30 * time.Second}
	f, err := r.Flow(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatalf("flow: %v\nvm-b console tail:\n%s", err, agents[1].Stderr())
	}
	if res.Publisher.Sent != n || res.Publisher.Reason != agentproto.EndCount {
		t.Errorf("publisher final = sent %d reason %s (%s)", res.Publisher.Sent, res.Publisher.Reason, res.Publisher.Error)
	}
	if len(res.Subscribers) != 1 {
		t.Fatalf("%d subscriber finals, want 1", len(res.Subscribers))
	}
	s := res.Subscribers[0]
	if s.Received != n || s.Lost != 0 || s.Reason != agentproto.EndCount {
		t.Errorf("subscriber final = received %d lost %d reason %s (%s)", s.Received, s.Lost, s.Reason, s.Error)
	}
	// Delivery is what this rack bounds; its latency is an emulator's and
	// across unsynchronised board clocks, so it is logged, not judged.
	p, err := rack.Profile("tcg-emulated")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := p.For("udp", spec.Payload); !ok || b.MaxLost == nil || int64(s.Lost) > *b.MaxLost {
		t.Errorf("lost %d against the tcg-emulated bound %+v (found %v)", s.Lost, b.MaxLost, ok)
	}
	c := res.Case("smoke", "udp 64B vm-a→vm-b (TCG, unsynchronised clocks)", spec)
	c.Finalize()
	t.Logf("udp 64B vm-a→vm-b: sent %d delivered %d lost %d; %s", c.Sent, c.Delivered, c.Lost, c.Summary.Line())

	group := r.VMSegmentGroup("seg0")
	if len(qemuWith(t, group)) != 2 {
		t.Errorf("QEMU processes on segment group %s: %v, want 2 while the boards run", group, qemuWith(t, group))
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	if pids := qemuWith(t, group); len(pids) != 0 {
		t.Errorf("QEMU processes %v still run on segment group %s after Close", pids, group)
	}
	for i, a := range agents {
		if a.Dead() == nil {
			t.Errorf("agent %d (%s) still reading after Close", i, a.Where())
		}
	}
}

// qemuWith returns the pids of processes whose command line mentions s
// (a rig's segment group is unique to it).
func qemuWith(t *testing.T, s string) []int {
	t.Helper()
	return testkit.PIDs(t, func(pid int) bool {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return err == nil && bytes.HasPrefix(cmd, []byte("qemu-system")) && bytes.Contains(cmd, []byte("mcast="+s))
	})
}
