package harness_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// TestWriteReportSoakAndHealthGate: a soak checkpoint filed by a spec
// survives the per-run merge (another suite's result written later does
// not drop it) and the run's index.html gains the soak section; a failed
// health gate (SynchronizedBeforeSuite) becomes a failed case.
func TestWriteReportSoakAndHealthGate(t *testing.T) {
	rack, prof, dir, cfgPath := simRackConfig(t)
	cpPath := filepath.Join(dir, "soak.jsonl")
	cp, err := soak.Create(cpPath, soak.Header{Name: "soak smoke", Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute)
	for i := range 3 {
		h := report.NewHistogram()
		h.Record(int64(1000 * (i + 1)))
		w := soak.Window{Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second),
			Agents: []soak.AgentWindow{{Agent: "board-b", RSSBytes: 10 << 20, Streams: []soak.StreamWindow{{Stream: "imu", Sent: 1, Delivered: 1, Histogram: h}}}}}
		if err := cp.Append(&w); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	entry := func(name string, v any) types.ReportEntry {
		b, _ := json.Marshal(v)
		return types.ReportEntry{Name: name, Value: types.ReportEntryValue{AsJSON: string(b)}}
	}
	mk := func(suite string) *harness.TestContext {
		tc := &harness.TestContext{Suite: suite, ConfigPath: cfgPath, Rack: rack, Profile: prof, Filter: rack.LabelFilter(),
			ReportDir: filepath.Join(dir, "report"), RunID: "soak-run", Started: time.Now()}
		tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
		return tc
	}
	c := latencyCase("soak", "smoke imu", 1000, 2000)
	soakReport := types.Report{StartTime: time.Now(), EndTime: time.Now(), SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "smoke", State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{entry("hilrig.case", &c), entry("hilrig.soak", cpPath)}},
	}}
	if _, err := mk("soak").WriteReport(soakReport, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	// faults sorts after soak and carries no soak: the merge keeps the soak.
	gate := types.Report{StartTime: time.Now(), EndTime: time.Now(), SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStateFailed,
			Failure: types.Failure{Message: "the rack is not healthy: board board-b unreachable"}},
	}}
	p, err := mk("faults").WriteReport(gate, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.RunResult, p.Result} {
		res, err := report.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if res.SoakCheckpoint != cpPath {
			t.Errorf("%s: soak checkpoint %q, want %q", f, res.SoakCheckpoint, cpPath)
		}
		var gated *report.Case
		for i := range res.Cases {
			if res.Cases[i].Suite == "faults" {
				gated = &res.Cases[i]
			}
		}
		if gated == nil || gated.Verdict != report.Fail || !strings.Contains(gated.Failure, "board-b unreachable") {
			t.Errorf("%s: failed health gate became %+v, want a failed faults case naming the reason", f, gated)
		}
	}
	for _, f := range []string{p.RunHTML, p.HTML} {
		html, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(html), `id="soak"`) || !strings.Contains(string(html), `id="soak-checks"`) {
			t.Errorf("%s has no soak section", f)
		}
	}
}
