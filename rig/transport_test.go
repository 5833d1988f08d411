package rig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
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
		// The case carries the route the rig decided: intra on board-a,
		// UDP between two namespaces of one kernel.
		want := report.Route{From: "board-a", To: "board-a", SameKernel: true, Class: report.ClassInProcess}
		if f.Transport == "udp" {
			want = report.Route{From: "board-b", To: "board-c", SameKernel: true, Class: report.ClassUDPOneHost}
		}
		if c.Route == nil || *c.Route != want {
			t.Errorf("%s case route %+v, want %+v", f.Transport, c.Route, want)
		}
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

// TestRouteOf: the rig decides a route's facts from the rack once: intra
// and shm classes by transport, UDP on one host when every end shares the
// sender's kernel (namespaces of the controller), between boards when one
// does not (an ssh board).
func TestRouteOf(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	rack.Boards = append(rack.Boards, fixtures.Board{Name: "far", Reach: fixtures.Reach{Kind: fixtures.ReachSSH, User: "u", Host: "far.example"}})
	for _, tc := range []struct {
		t        fixtures.Transport
		from     string
		to       []string
		same     bool
		class    kind.Class
		toJoined string
	}{
		{fixtures.Intra, "board-a", []string{"board-a"}, true, kind.ClassInProcess, "board-a"},
		{fixtures.Shm, "board-a", []string{"board-b"}, true, kind.ClassSharedMemory, "board-b"},
		{fixtures.UDP, "board-b", []string{"board-c"}, true, kind.ClassUDPOneHost, "board-c"},
		{fixtures.UDP, "board-b", []string{"far"}, false, kind.ClassUDPBoards, "far"},
		{fixtures.UDP, "board-b", []string{"board-c", "far"}, false, kind.ClassUDPBoards, "board-c,far"},
	} {
		got := rig.RouteOf(rack, tc.t, tc.from, tc.to...)
		want := report.Route{From: tc.from, To: tc.toJoined, SameKernel: tc.same, Class: tc.class}
		if got != want {
			t.Errorf("RouteOf(%s, %s → %v) = %+v, want %+v", tc.t, tc.from, tc.to, got, want)
		}
	}
}
