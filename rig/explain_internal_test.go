package rig

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
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
