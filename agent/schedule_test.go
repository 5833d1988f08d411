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

// TestSubscriberStamps: a subscriber started with Stamps sends each
// message's sequence, receipt and latency in its windows, the receipt
// mappable to CLOCK_REALTIME through the window's MonoEndNs.
func TestSubscriberStamps(t *testing.T) {
	dir := t.TempDir()
	const n = 50
	subS, pubS := startSession(t, dir), startSession(t, dir)
	c := contract("agent/stamps")
	subS.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "astamps", Contract: c, Count: n, Stamps: 1000, WindowNs: int64(time.Second)}))
	subS.expect(agentproto.KindStarted)
	pubS.send(agentproto.NewStart(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "astamps", Contract: c, Count: n, Payload: 64, RateHz: 1000}))
	pubS.expect(agentproto.KindStarted)
	var got []agentproto.MessageStamp
	deadline := time.After(20 * time.Second)
loop:
	for {
		var m *agentproto.Msg
		select {
		case m = <-subS.msgs:
		case <-deadline:
			t.Fatal("no final within 20s")
		}
		switch {
		case m == nil:
			t.Fatal("agent output ended")
		case m.Kind == agentproto.KindFinal:
			break loop
		case m.Kind != agentproto.KindWindow:
			continue
		}
		w := m.Window
		for _, s := range w.Stamps {
			if s.LatencyNs <= 0 || s.RecvMono > w.MonoEndNs || w.EndNs-(w.MonoEndNs-s.RecvMono) < w.StartNs-int64(time.Millisecond) {
				t.Fatalf("stamp %+v outside window %d..%d (mono end %d)", s, w.StartNs, w.EndNs, w.MonoEndNs)
			}
		}
		got = append(got, w.Stamps...)
	}
	if len(got) != n || got[0].Seq != 1 || got[n-1].Seq != n {
		t.Fatalf("%d stamps, first %+v; want %d from seq 1", len(got), got, n)
	}
	pubS.expect(agentproto.KindFinal)
	for _, s := range []*session{subS, pubS} {
		s.send(agentproto.NewStop(""))
		s.expect(agentproto.KindBye)
		if err := s.wait(); err != nil {
			t.Error(err)
		}
	}
}
