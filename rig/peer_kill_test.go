package rig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// TestPeerAgentKilledMidRun: the subscriber board's peer agent
// (hilrig-peer, Cyclone DDS) is SIGKILLed while a flow runs; the
// subscriber's error — and the flow's — names the board and the peer.
func TestPeerAgentKilledMidRun(t *testing.T) {
	const peer = "cyclonedds"
	ctx, rack, r := peerRig(t, peer)
	// The rack's UDP link between two boards: the peer runs over its veth
	// addresses (loopback when the boards share a network namespace).
	var link *fixtures.Link
	for i := range rack.Links {
		if rack.Links[i].Transport == fixtures.UDP {
			link = &rack.Links[i]
			break
		}
	}
	if link == nil {
		t.Fatal("sim rack has no udp link")
	}
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: link.Name, Middleware: peer, Payload: 64, RateHz: 1000,
		Duration: time.Minute, Window: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	sub := f.Subscribers[0]
	deadline := time.Now().Add(20 * time.Second)
	for delivered := uint64(0); delivered == 0; {
		for _, w := range sub.TakeWindows() {
			delivered += w.Received
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer subscriber delivered nothing within 20s")
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	a, err := r.Agent(ctx, link.B)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(a.PID()) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(exe); !strings.HasPrefix(base, "hilrig-peer") {
		t.Fatalf("board %s's agent is %s, want the peer agent hilrig-peer", link.B, exe)
	}
	if err := syscall.Kill(a.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	_, serr := sub.Wait(wctx)
	if !errors.Is(serr, rig.ErrAgent) {
		t.Fatalf("killed subscriber's Wait = %v, want ErrAgent", serr)
	}
	t.Logf("killed subscriber's error: %v", serr)
	for _, want := range []string{"board " + link.B, "peer " + peer} {
		if !strings.Contains(serr.Error(), want) {
			t.Errorf("killed subscriber's error %q does not name %q", serr, want)
		}
	}
	_ = f.Publisher.Stop()
	_, ferr := f.Wait(wctx)
	if ferr == nil || !strings.Contains(ferr.Error(), "board "+link.B) || !strings.Contains(ferr.Error(), "peer "+peer) {
		t.Errorf("flow's Wait = %v, want an error naming board %s and peer %s", ferr, link.B, peer)
	}
}

// peerRig opens the sim rack with the peer agent built with tag peer
// (skipping the test when the peer is not installed); the rig is closed
// and the context cancelled when the test ends.
func peerRig(t *testing.T, peer string) (context.Context, *fixtures.Rack, *rig.Rig) {
	t.Helper()
	if err := rig.PeerInstalled(peer); err != nil {
		t.Skipf("peer %s not installed: %v", peer, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold cgo build on a busy machine
	t.Cleanup(cancel)
	bin, err := deploy.Build(ctx, deploy.BuildOptions{Peers: []string{peer}, CacheDir: buildCache})
	if err != nil {
		t.Fatalf("build the peer agent: %v", err)
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	r := openRig(ctx, t, rack, &rig.Options{Binary: bin})
	return ctx, rack, r
}
