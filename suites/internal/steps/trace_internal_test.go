package steps

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// ginkgo.config's trace reaches every measured flow: off arms nothing,
// on-breach arms the agents with the case's own max and p99 bounds and the
// configured buffer (it was parsed and validated but never sent).
func TestTraceSpecFollowsConfig(t *testing.T) {
	rack, prof := simRack2Core(t)
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

// trace_overhead: the untraced reference's p50/p99 against the case's own
// go on the kept snapshot, or into a note when none was kept; the
// reference run itself arms no trace.
func TestTraceOverheadOnCase(t *testing.T) {
	ref := report.Summary{Count: 900, P50: 20_000, P99: 80_000}
	c := &report.Case{Summary: report.Summary{Count: 900, P50: 30_000, P99: 200_000}, Trace: &report.TraceRef{Reason: "max"}}
	traceOverhead(c, ref)
	o := c.Trace.Overhead
	if o == nil || o.OffP50Ns != 20_000 || o.ArmedP50Ns != 30_000 || o.OffP99Ns != 80_000 || o.ArmedP99Ns != 200_000 || !strings.Contains(o.Method, "untraced just before") {
		t.Fatalf("overhead on the snapshot: %+v", o)
	}
	c = &report.Case{Summary: report.Summary{Count: 900, P50: 30_000, P99: 200_000}}
	traceOverhead(c, ref)
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "p50 20.0µs off → 30.0µs armed, p99 80.0µs off → 200µs armed") {
		t.Fatalf("overhead without a snapshot: notes %q", c.Notes)
	}
	rack, prof := simRack2Core(t)
	env := &Env{TestContext: &harness.TestContext{Rack: rack, Profile: prof, Config: &fixtures.Config{Trace: fixtures.TraceOnBreach, TraceBufferKB: 512, TraceOverhead: fixtures.SwitchOn}}}
	if ts := traceSpec(env, Params{Path: ShmCopy, Payload: 64}); ts == nil {
		t.Fatal("traced case: no trace spec")
	}
}

// simRack2Core is the sim rack with its sim-2core bounds profile.
func simRack2Core(t *testing.T) (*fixtures.Rack, *fixtures.BoundsProfile) {
	t.Helper()
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("sim-2core")
	if err != nil {
		t.Fatal(err)
	}
	return rack, prof
}
