package agent_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
)

// TestScheduledPublisher: a publisher with a Schedule sends its plan
// (sizes 8..200 B, offsets 0, 4, 10 ms) looped by Count with its period,
// every message delivered, and its last send no earlier than the plan
// says (second pass, third entry: 20 + 10 ms after the first).
func TestScheduledPublisher(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	subS, pubS := startSession(t, dir), startSession(t, dir)
	c := contract("agent/sched")
	subS.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "asched", Contract: c, Count: n}))
	subS.expect(agentproto.KindStarted)
	plan := &agentproto.Schedule{OffsetsNs: []int64{0, 4e6, 10e6}, Sizes: []int{8, 100, 200}, PeriodNs: 20e6}
	pubS.send(agentproto.NewStart(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "asched", Contract: c, Count: n, Payload: 200, Schedule: plan}))
	pubS.expect(agentproto.KindStarted)
	pf := pubS.expect(agentproto.KindFinal).Final
	sf := subS.expect(agentproto.KindFinal).Final
	if pf.Sent != n || pf.Reason != agentproto.EndCount {
		t.Errorf("publisher final = %+v", pf)
	}
	if sf.Received != n || sf.Lost != 0 || sf.LastSeq != n {
		t.Errorf("subscriber final = %+v", sf)
	}
	if min := 30 * time.Millisecond; time.Duration(pf.DurationNs) < min {
		t.Errorf("publisher ran %v, the plan takes at least %v", time.Duration(pf.DurationNs), min)
	}
	for _, s := range []*session{subS, pubS} {
		s.send(agentproto.NewStop(""))
		s.expect(agentproto.KindBye)
		if err := s.wait(); err != nil {
			t.Error(err)
		}
	}
}
