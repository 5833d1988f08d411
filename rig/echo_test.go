package rig_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/rig"
)

// TestSimRackRoundTrip: a pinger on one sim board and an echo on another
// (intra: both in board-a's agent) exchange 1,000 pings back to back;
// every ping is answered, matched by sequence number, and its RTT is
// recorded on the pinger's clock in the windows and the final.
func TestSimRackRoundTrip(t *testing.T) {
	r := openSim(t)
	for _, tc := range []struct {
		name string
		spec rig.EchoSpec
		ns   bool
	}{
		{"shm a→b→a", rig.EchoSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, Markers: true}}, false},
		{"shm-loan a→b→a", rig.EchoSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 4096, Send: agentproto.SendLoan}}, false},
		{"intra a", rig.EchoSpec{Traffic: rig.Traffic{From: "board-a", Transport: "intra", Payload: 64}}, false},
		{"udp b→c→b", rig.EchoSpec{Traffic: rig.Traffic{Link: "b-c-udp", Payload: 64}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ns {
				if err := netns.Available(); err != nil {
					t.Skipf("needs network namespaces: %v", err)
				}
			}
			const n, warm = 1000, 50
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			spec := tc.spec
			spec.Count, spec.WarmUp, spec.Window = n, warm, 100*time.Millisecond
			f, err := r.Echo(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.spec.Transport != "intra" && f.Pinger.Board() == f.Echo.Board() {
				t.Errorf("pinger and echo both on %s", f.Pinger.Board())
			}
			res, err := f.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p, e := res.Pinger, res.Echo
			if p.Reason != agentproto.EndCount || p.Sent != n || p.Received != n || p.Lost != 0 || p.LastSeq != n {
				t.Errorf("pinger final = %+v", p)
			}
			if e.Received != n || e.Sent != n || e.Lost != 0 || e.Reason != agentproto.EndStopped {
				t.Errorf("echo final = %+v", e)
			}
			var rtts int64
			for _, w := range res.Windows {
				if w.Latency != nil {
					rtts += w.Latency.Count()
				}
			}
			if rtts != n-warm {
				t.Errorf("windows carry %d RTT samples, want %d", rtts, n-warm)
			}
			c := res.Case("smoke", tc.name, f.Spec)
			c.Finalize()
			if c.Sent != n || c.Delivered != n || c.Lost != 0 || c.Summary.Count != n-warm || c.Summary.Min <= 0 {
				t.Errorf("case: sent %d delivered %d lost %d summary %+v", c.Sent, c.Delivered, c.Lost, c.Summary)
			}
			if spec.Markers && (p.Marks != n || e.Marks != n) {
				t.Errorf("marks pinger %d echo %d, want %d each", p.Marks, e.Marks, n)
			}
			t.Logf("%s %d B RTT (%s on %s, echo on %s): %s", tc.name, spec.Payload, "pinger", f.Pinger.Board(), f.Echo.Board(), c.Summary.Line())
		})
	}
}

// TestEchoSpecErrors: specs the rig refuses before starting anything.
func TestEchoSpecErrors(t *testing.T) {
	r := openSim(t)
	ctx := context.Background()
	for name, spec := range map[string]rig.EchoSpec{
		"intra across boards": {Traffic: rig.Traffic{From: "board-a", Transport: "intra", Payload: 64, Count: 1}, To: "board-b"},
		"payload too small":   {Traffic: rig.Traffic{Link: "a-b-shm", Payload: 8, Count: 1}},
		"unknown transport":   {Traffic: rig.Traffic{From: "board-a", Transport: "carrier-pigeon", Payload: 64, Count: 1}, To: "board-b"},
		"no boards":           {Traffic: rig.Traffic{Payload: 64, Count: 1}},
		"unknown link":        {Traffic: rig.Traffic{Link: "nope", Payload: 64, Count: 1}},
	} {
		if _, err := r.Echo(ctx, spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
