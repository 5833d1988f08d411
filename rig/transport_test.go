package rig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/rig"
)

// TestIntraAndBatchedUDPFlows: the rig runs intra-process flows (both
// ends in one agent) and UDP flows with extra options (batching), each
// delivering every message; misuse is refused with a message naming it.
func TestIntraAndBatchedUDPFlows(t *testing.T) {
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, spec := range []rig.FlowSpec{
		{Traffic: rig.Traffic{From: "board-a", Transport: "intra", Payload: 256, Count: 3000, RateHz: 10000}, To: []string{"board-a"}},
		{Traffic: rig.Traffic{Link: "b-c-udp", Payload: 1024, Count: 3000, RateHz: 2000, UDP: &middleware.UDPConfig{BatchBytes: 1400, BatchDelay: 200 * time.Microsecond}}},
	} {
		f, err := r.Flow(ctx, spec)
		if err != nil {
			t.Fatalf("%s flow: %v", string(spec.Transport)+spec.Link, err)
		}
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkZeroLoss(t, res, 3000)
		if f.Transport == "udp" && f.Subscribers[0].Spec.Contract.UDP.BatchBytes != 1400 {
			t.Errorf("subscriber contract lost the batching options: %+v", f.Subscribers[0].Spec.Contract.UDP)
		}
		c := res.Case("smoke", string(f.Transport), f.Spec)
		c.Finalize()
		t.Logf("%s: %s", f.Transport, c.Summary.Line())
	}
	for _, bad := range []struct {
		spec rig.FlowSpec
		want string
	}{
		{rig.FlowSpec{Traffic: rig.Traffic{From: "board-a", Transport: "intra", Payload: 64, Count: 10}, To: []string{"board-b"}}, "publisher's board"},
		{rig.FlowSpec{Traffic: rig.Traffic{Link: "b-c-udp", Payload: 64, Count: 10, UDP: &middleware.UDPConfig{Listen: "127.0.0.1:1"}}}, "set by the rig"},
		{rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, Count: 10, UDP: &middleware.UDPConfig{BatchBytes: 1}}}, "UDP options on a shm flow"},
	} {
		if _, err := r.Flow(ctx, bad.spec); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Flow(%+v) = %v, want an error saying %q", bad.spec, err, bad.want)
		}
	}
}
