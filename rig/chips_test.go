package rig_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/rig"
)

// TestTwoRigsOneMachine: two rigs of the sim rack open at once (parallel
// suite binaries do) each get their own sim GPIO chip instead of sharing
// the rack's "sim:hilrig", and both run marked flows at the same time.
func TestTwoRigsOneMachine(t *testing.T) {
	r1, r2 := openSim(t), openSim(t)
	c1, c2 := r1.Chip("sim:hilrig"), r2.Chip("sim:hilrig")
	if c1 == c2 || c1 == "sim:hilrig" || c2 == "sim:hilrig" {
		t.Fatalf("rig chips %q and %q: want distinct, per-rig names", c1, c2)
	}
	if got := r1.Chip("gpiochip0"); got != "gpiochip0" {
		t.Errorf("Chip of a real chip = %q, want it unchanged", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, Count: 2000, RateHz: 10000, Markers: true}}
	var fs []*rig.Flow
	for _, r := range []*rig.Rig{r1, r2} {
		f, err := r.Flow(ctx, spec)
		if err != nil {
			t.Fatal(err) // a shared chip fails here: the second rig's lines are busy
		}
		fs = append(fs, f)
	}
	for i, f := range fs {
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("rig %d: %v", i+1, err)
		}
		if res.Publisher.Marks != 2000 || res.Subscribers[0].Marks != 2000 || res.Subscribers[0].Received != 2000 {
			t.Errorf("rig %d: marks pub %d sub %d, received %d; want 2000 each", i+1, res.Publisher.Marks, res.Subscribers[0].Marks, res.Subscribers[0].Received)
		}
	}
}
