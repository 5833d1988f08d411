package rig_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// TestVMMixedArchUDP opens the mixed-architecture example rack (an amd64
// and an arm64 QEMU board on one segment): each agent must report its
// board's GOARCH, 500 reliable UDP messages go from the amd64 build to
// the arm64 build with none lost, and 200 round trips go amd64 → arm64 →
// amd64 with every reply back. Needs HILRIG_VM=1 and HILRIG_VM_ARM64=1 (both board images are
// built on first use; the arm64 one is a cross build of many minutes).
func TestVMMixedArchUDP(t *testing.T) {
	if os.Getenv("HILRIG_VM") != "1" || os.Getenv("HILRIG_VM_ARM64") != "1" {
		t.Skip("VM rack test: set HILRIG_VM=1 and HILRIG_VM_ARM64=1 to boot an amd64 and an arm64 QEMU board (needs qemu-system-x86, qemu-system-arm, gcc-aarch64-linux-gnu, the arm64 busybox; see .ci/test)")
	}
	if testing.Short() {
		// Two TCG boards for ~1.5 min: once per CI run (the full pass),
		// not again under the race detector's -short pass.
		t.Skip("VM rack test: two TCG boards for ~1.5 min; not in -short")
	}
	rack, err := fixtures.LoadRack("../fixtures/examples/vm-mixed-arch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache}, StartTimeout: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	agents := map[string]*rig.Agent{}
	for b, arch := range map[string]string{"vm-x86": "amd64", "vm-arm": "arm64"} {
		a, err := r.Agent(ctx, b)
		if err != nil {
			t.Fatalf("agent on %s: %v", b, err)
		}
		if a.Hello.GOARCH != arch || a.Hello.GOOS != "linux" {
			t.Fatalf("%s: agent hello says %s/%s, want linux/%s", b, a.Hello.GOOS, a.Hello.GOARCH, arch)
		}
		t.Logf("%s: %s (%s, kernel %s)", b, a.Where(), a.Hello.Agent, a.Hello.Kernel)
		agents[b] = a
	}
	const n = 500
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "x86-arm-udp", Payload: 4096, Count: n, RateHz: 200}, Drain: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatalf("flow: %v\nvm-arm console tail:\n%s", err, agents["vm-arm"].Stderr())
	}
	if res.Publisher.Sent != n || len(res.Subscribers) != 1 || res.Subscribers[0].Received != n || res.Subscribers[0].Lost != 0 {
		t.Fatalf("amd64 → arm64 flow: publisher %+v subscribers %+v", res.Publisher, res.Subscribers)
	}
	const m = 200
	e, err := r.Echo(ctx, rig.EchoSpec{Traffic: rig.Traffic{Link: "x86-arm-udp", Payload: 64, Count: m, Window: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Pinger.Board() != "vm-x86" || e.Echo.Board() != "vm-arm" {
		t.Fatalf("round trip pinger %s echo %s, want vm-x86 → vm-arm", e.Pinger.Board(), e.Echo.Board())
	}
	er, err := e.Wait(ctx)
	if err != nil {
		t.Fatalf("round trip: %v\nvm-arm console tail:\n%s", err, agents["vm-arm"].Stderr())
	}
	if p := er.Pinger; p.Reason != agentproto.EndCount || p.Sent != m || p.Received != m || p.Lost != 0 {
		t.Fatalf("amd64 → arm64 → amd64 round trip: pinger final %+v", p)
	}
	c := er.Case("smoke", "udp 64B vm-x86→vm-arm→vm-x86 (TCG)", rig.EchoSpec{Traffic: rig.Traffic{Link: "x86-arm-udp", Payload: 64}})
	c.Finalize()
	t.Logf("mixed-arch round trip: %s (TCG: an emulator's timing)", c.Summary.Line())
}
