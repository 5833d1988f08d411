package rig

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
)

func TestCaseCarriesTraceAndCounters(t *testing.T) {
	short := &agentproto.TraceSnapshot{Reason: "short", FromNs: 0, ToNs: 3e6, Chrome: []byte(`{}`)}
	long := &agentproto.TraceSnapshot{Reason: "long", FromNs: 10e6, ToNs: 20e6, Summary: "hlr-hog ran", Chrome: []byte(`{"traceEvents":[]}`)}
	res := &FlowResult{
		Publisher:   &agentproto.Final{Endpoint: "pub", Sent: 10, Counters: &report.EndpointCounters{MinorFaults: 5, Method: "m"}},
		Subscribers: []*agentproto.Final{{Endpoint: "sub", Received: 10, Counters: &report.EndpointCounters{GCCycles: 1, Method: "m"}}},
		Windows:     [][]agentproto.Window{{{Trace: short}, {}, {Trace: long}}},
	}
	c := res.Case("s", "n", FlowSpec{Traffic: Traffic{From: "a", Payload: 8}, To: []string{"b"}})
	if c.Trace == nil || c.Trace.Reason != "long" || c.Trace.Board != "b" || string(c.Trace.Chrome) != `{"traceEvents":[]}` || c.Trace.Summary != "hlr-hog ran" {
		t.Fatalf("trace %+v", c.Trace)
	}
	if len(c.Counters) != 2 || c.Counters[0].Endpoint != "pub on a" || c.Counters[0].MinorFaults != 5 || c.Counters[1].Endpoint != "sub on b" {
		t.Fatalf("counters %+v", c.Counters)
	}
}

// The case carries the stage split joined from the finals' stamps, and
// none when the flow was not asked for stages.
func TestCaseCarriesStageSplit(t *testing.T) {
	cb := report.NewHistogram()
	cb.Record(300)
	res := &FlowResult{
		Publisher:   &agentproto.Final{Endpoint: "pub", Sent: 2, Stages: &agentproto.StageStamps{FirstSeq: 1, Offsets: []int32{100, 100}, Stamped: 2}},
		Subscribers: []*agentproto.Final{{Endpoint: "sub", Received: 2, Stages: &agentproto.StageStamps{FirstSeq: 1, Offsets: []int32{2100, 4100}, Stamped: 2, Callback: cb}}},
	}
	c := res.Case("s", "n", FlowSpec{Traffic: Traffic{From: "a", Payload: 8, Transport: "shm", Stages: true,
		Trace: &agentproto.TraceSpec{Mode: agentproto.TraceOnBreach, BufferKB: 512}}, To: []string{"b"}})
	notes := strings.Join(c.Notes, "\n")
	if !strings.Contains(notes, "measured with the kernel trace armed (on-breach, 512 KiB per CPU); no window kept a snapshot") ||
		!strings.Contains(notes, "stage stamps on") {
		t.Fatalf("notes %q: a traced, stamped case must say so", c.Notes)
	}
	if c.Stages == nil || c.Stages.Count != 2 || c.Stages.Wake.Max < 3990 || c.Stages.Wake.Min > 2010 || c.Stages.Callback.Count != 1 {
		t.Fatalf("stages %+v", c.Stages)
	}
	res.Publisher.Stages, res.Subscribers[0].Stages = nil, nil
	if c := res.Case("s", "n", FlowSpec{Traffic: Traffic{From: "a", Payload: 8}, To: []string{"b"}}); c.Stages != nil {
		t.Fatalf("stages without stamps: %+v", c.Stages)
	}
}

// A flow's endpoints pinned to CPUs are checked against the NIC IRQ
// affinity their boards' agents reported: an IRQ allowed on the
// subscriber's CPU is a note of the case naming the NIC, the IRQ, the CPU
// and the endpoint; the unpinned publisher's board tuning is not looked at.
func TestCaseNotesIRQOnPinnedCPU(t *testing.T) {
	cpu := 1
	tun := &report.HostTuning{NICIRQs: []report.NICIRQ{{NIC: "eth0", IRQ: 38, Name: "virtio2-input.0", Affinity: "0-1"}, {NIC: "eth0", IRQ: 39, Affinity: "0"}}}
	f := &Flow{
		Publisher: &Endpoint{Spec: agentproto.Start{Endpoint: "f-pub"}, agent: &Agent{Board: &fixtures.Board{Name: "a"}, Hello: agentproto.Hello{Tuning: tun}}},
		Subscribers: []*Endpoint{{Spec: agentproto.Start{Endpoint: "f-sub0", CPU: &cpu},
			agent: &Agent{Board: &fixtures.Board{Name: "b"}, Hello: agentproto.Hello{Tuning: tun}}}},
	}
	res := &FlowResult{pins: f.pins(), Publisher: &agentproto.Final{Endpoint: "f-pub"}, Subscribers: []*agentproto.Final{{Endpoint: "f-sub0"}}}
	c := res.Case("s", "n", FlowSpec{Traffic: Traffic{From: "a", Payload: 8}, To: []string{"b"}})
	want := "NIC eth0 IRQ 38 (virtio2-input.0) affinity 0-1 may be handled on CPU 1 of b, where endpoint f-sub0 is pinned"
	if len(c.Notes) != 1 || !strings.HasPrefix(c.Notes[0], want) {
		t.Fatalf("notes %q, want one starting %q", c.Notes, want)
	}
	cpu = 2 // pinned elsewhere: outside every affinity, no note
	res.pins = f.pins()
	if c := res.Case("s", "n", FlowSpec{Traffic: Traffic{From: "a", Payload: 8}, To: []string{"b"}}); len(c.Notes) != 0 {
		t.Fatalf("CPU 2 outside every affinity: notes %q", c.Notes)
	}
}
