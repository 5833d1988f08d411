package steps

import (
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// ginkgo.config's trace reaches every measured flow: off arms nothing,
// on-breach arms the agents with the case's own max and p99 bounds and the
// configured buffer (it was parsed and validated but never sent).
func TestTraceSpecFollowsConfig(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("sim-2core")
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Path: ShmCopy, Payload: 64}
	env := &Env{TestContext: &harness.TestContext{Rack: rack, Profile: prof, Config: &fixtures.Config{Trace: fixtures.TraceOff}}}
	if ts := traceSpec(env, p); ts != nil {
		t.Fatalf("trace off: %+v, want nil", ts)
	}
	env.Config = &fixtures.Config{Trace: fixtures.TraceOnBreach, TraceBufferKB: 512}
	ts := traceSpec(env, p)
	b, ok := env.Bounds(p.Path.Transport, p.Payload)
	if !ok || b.Max == 0 {
		t.Fatalf("sim-2core has no max bound for %v at %d B", p.Path, p.Payload)
	}
	if ts == nil || ts.Mode != agentproto.TraceOnBreach || ts.BufferKB != 512 || ts.MaxNs != int64(b.Max) || ts.P99Ns != int64(b.P99) {
		t.Fatalf("on-breach: %+v, want mode %s, 512 KiB, max %v, p99 %v", ts, agentproto.TraceOnBreach, b.Max, b.P99)
	}
}
