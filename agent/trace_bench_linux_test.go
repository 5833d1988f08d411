package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
)

// BenchmarkTraceOverhead measures what an armed trace costs the latency
// it watches: the same shm flow (1,000 messages of 64 B at 2 kHz, one
// agent) alternately with tracing off and armed (on-breach, 1 MiB per
// CPU, bounds high enough that no snapshot is taken — the steady-state
// cost of the tracefs events and the send/recv markers), in one run. It
// reports p50 and p99 of both and the armed/off ratios.
//
//	go test -run '^$' -bench TraceOverhead -benchtime 3x ./agent
func BenchmarkTraceOverhead(b *testing.B) {
	testkit.NeedRoot(b, "tracefs needs root")
	dir := b.TempDir()
	s := startSession(b, dir)
	off, armed := report.NewHistogram(), report.NewHistogram()
	run := func(i int, trace *agentproto.TraceSpec, into *report.Histogram) {
		c := contract(fmt.Sprintf("ovh/%d", i))
		sub := fmt.Sprintf("sub%d", i)
		s.start(agentproto.Start{Endpoint: sub, Role: agentproto.Subscriber, Domain: "ovh", Contract: c,
			Count: 1000, WarmUp: 100, Trace: trace})
		s.start(agentproto.Start{Endpoint: fmt.Sprintf("pub%d", i), Role: agentproto.Publisher, Domain: "ovh", Contract: c,
			Payload: 64, Count: 1000, RateHz: 2000, Trace: trace})
		for {
			m := s.expect(agentproto.KindFinal)
			if m.Final.Endpoint == sub {
				into.Merge(m.Final.Latency)
				return
			}
		}
	}
	spec := &agentproto.TraceSpec{Mode: agentproto.TraceOnBreach, BufferKB: 1024, MaxNs: int64(time.Hour)}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		run(2*i, nil, off)
		run(2*i+1, spec, armed)
	}
	b.StopTimer()
	so, sa := off.Summary(), armed.Summary()
	b.ReportMetric(float64(so.P50), "p50-off-ns")
	b.ReportMetric(float64(sa.P50), "p50-armed-ns")
	b.ReportMetric(float64(so.P99), "p99-off-ns")
	b.ReportMetric(float64(sa.P99), "p99-armed-ns")
	if so.P50 > 0 && so.P99 > 0 {
		b.ReportMetric(float64(sa.P50)/float64(so.P50), "p50-armed/off")
		b.ReportMetric(float64(sa.P99)/float64(so.P99), "p99-armed/off")
	}
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
}
