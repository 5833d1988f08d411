package agent_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
)

// Two agents (as two boards on one host) run a shm flow with Stages on:
// both finals carry stamps, and the controller's join gives a copy, a
// commit → wake and a wake → callback for every measured message.
// With Stages off, no stamps travel.
func TestStagesAcrossAgents(t *testing.T) {
	const n, warm = 2000, 100
	for _, on := range []bool{true, false} {
		dir := t.TempDir()
		subS, pubS := startSession(t, dir), startSession(t, dir)
		c := contract("agent/stages")
		subS.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "stg", Contract: c, Count: n, WarmUp: warm, Stages: on})
		pubS.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "stg", Contract: c, Count: n, WarmUp: warm,
			Payload: 200, RateHz: 20000, Stages: on})
		pf := pubS.expect(agentproto.KindFinal).Final
		sf := subS.expect(agentproto.KindFinal).Final
		for _, s := range []*session{subS, pubS} {
			s.stop()
		}
		if sf.Received != n || sf.Lost != 0 {
			t.Fatalf("stages %v: subscriber final %+v", on, sf)
		}
		if !on {
			if pf.Stages != nil || sf.Stages != nil {
				t.Fatalf("stages off but stamps sent: %+v %+v", pf.Stages, sf.Stages)
			}
			continue
		}
		if pf.Stages == nil || sf.Stages == nil {
			t.Fatalf("stages on: publisher stamps %v, subscriber stamps %v", pf.Stages, sf.Stages)
		}
		if pf.Stages.Stamped != n-warm || sf.Stages.Stamped != n-warm || len(pf.Stages.Offsets) != n-warm || len(sf.Stages.Offsets) != n-warm {
			t.Fatalf("stamped %d/%d offsets %d/%d, want %d each", pf.Stages.Stamped, sf.Stages.Stamped, len(pf.Stages.Offsets), len(sf.Stages.Offsets), n-warm)
		}
		st := agentproto.JoinStages(pf.Stages, []*agentproto.StageStamps{sf.Stages})
		if st == nil || st.Count != n-warm || st.Copy.Count != n-warm || st.Wake.Count != n-warm || st.Callback.Count != n-warm {
			t.Fatalf("joined split %+v", st)
		}
		// Every stage lies inside the message's whole latency.
		lat := sf.Latency.Summary()
		for name, s := range map[string]int64{"copy": st.Copy.Max, "wake": st.Wake.P50, "callback": st.Callback.P50} {
			if s > lat.Max+lat.Max/100 {
				t.Errorf("%s stage %s beyond the latency max %d", name, time.Duration(s), lat.Max)
			}
		}
		if st.Copy.Max <= 0 || st.Wake.Max <= 0 {
			t.Errorf("a 200-byte copy and a wake-up take time: %+v", st)
		}
		t.Logf("copy p50 %v, commit→wake p50 %v p99 %v, wake→callback p50 %v; latency p50 %v",
			time.Duration(st.Copy.P50), time.Duration(st.Wake.P50), time.Duration(st.Wake.P99), time.Duration(st.Callback.P50), time.Duration(lat.P50))
	}
}
