package soakrun_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// TestPlanReplaying: a replay soak's flows are the recording's channels
// on the sim rack's shm link, each carrying its plan; the latency bound
// is the profile's max at the largest channel payload; the rest of the
// plan (duration, windows, churn) is the smoke plan's; a channel whose
// plan cannot loop is refused.
func TestPlanReplaying(t *testing.T) {
	cfg, rack, prof := testPlanInputs(t)
	p, err := soakrun.NewPlan(soakrun.ProfileSmoke, cfg, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	imu := &agentproto.Schedule{OffsetsNs: []int64{0, 5e6}, Sizes: []int{324, 324}, PeriodNs: 10e6}
	cam := &agentproto.Schedule{OffsetsNs: []int64{0}, Sizes: []int{57660}, PeriodNs: 66e6}
	q, err := p.Replaying([]soakrun.ReplayFlow{{Name: "replay-imu", Payload: 324, RateHz: 200, Schedule: imu}, {Name: "replay-cam", Payload: 57660, RateHz: 15, Schedule: cam}}, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Flows) != 2 || q.Flows[0].Schedule != imu || q.Flows[1].Transport != fixtures.Shm || q.Flows[1].Link == "" || q.Duration != p.Duration || q.Churn != p.Churn {
		t.Fatalf("replay plan %s: %+v", q, q.Flows)
	}
	b, ok := prof.For(fixtures.Shm, 57660)
	if !ok || q.Bounds.MaxLatency != time.Duration(b.Bounds.Max) {
		t.Fatalf("max latency %v, want the profile's max at 57660 B (%v, %v)", q.Bounds.MaxLatency, b.Bounds.Max, ok)
	}
	if len(p.Flows) != 1 || p.Flows[0].Schedule != nil {
		t.Fatalf("Replaying changed the plan it was called on: %+v", p.Flows)
	}
	if _, err := p.Replaying([]soakrun.ReplayFlow{{Name: "x", Payload: 64, Schedule: &agentproto.Schedule{OffsetsNs: []int64{0}, Sizes: []int{64}}}}, rack, prof); !errors.Is(err, soakrun.ErrPlan) {
		t.Fatalf("plan without a period: %v, want ErrPlan", err)
	}
}

// TestReplayTrafficFlag: -hilrig.soak-traffic is mix by default, replay
// when asked, and anything else an ErrPlan naming the flag.
func TestReplayTrafficFlag(t *testing.T) {
	if r, err := soakrun.ReplayTraffic(); r || err != nil {
		t.Fatalf("default: %v, %v; want mix", r, err)
	}
	setFlags(t, map[string]string{"hilrig.soak-traffic": "replay"})
	if r, err := soakrun.ReplayTraffic(); !r || err != nil {
		t.Fatalf("replay: %v, %v", r, err)
	}
	setFlags(t, map[string]string{"hilrig.soak-traffic": "bag"})
	if _, err := soakrun.ReplayTraffic(); !errors.Is(err, soakrun.ErrPlan) {
		t.Fatalf("bag: %v, want ErrPlan", err)
	}
}
