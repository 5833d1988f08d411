package soakrun_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// TestCasesCarryVerdictsAsChecks: the verdicts case holds every soak
// check as a report check, and Finalize (run by harness.Record) keeps
// them, so a soak that lost messages is a failed case with a failed
// "lost" check, and a clean one passes.
func TestCasesCarryVerdictsAsChecks(t *testing.T) {
	for _, lost := range []int64{0, 3} {
		path := filepath.Join(t.TempDir(), "soak.jsonl")
		cp, err := soak.Create(path, soak.Header{Name: "unit", Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().Add(-time.Minute)
		for i := range 4 {
			h := report.NewHistogram()
			h.Record(5000)
			w := soak.Window{Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second),
				Agents: []soak.AgentWindow{{Agent: "b", RSSBytes: 8 << 20, Streams: []soak.StreamWindow{{Stream: "imu", Sent: 100, Delivered: 100 - lost, Lost: lost, Histogram: h}}}}}
			if err := cp.Append(&w); err != nil {
				t.Fatal(err)
			}
		}
		cp.Close()
		lg, err := soak.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		v := soak.Judge(lg, soak.Bounds{})
		cases := soakrun.Cases("soak", "unit", lg, v, soak.Bounds{})
		vc := cases[len(cases)-1]
		if !strings.HasSuffix(vc.Name, "verdicts") {
			t.Fatalf("last case %q, want the verdicts case", vc.Name)
		}
		vc.Finalize()
		if len(vc.Checks) != len(v.Checks) || len(vc.Checks) == 0 {
			t.Fatalf("lost %d: verdicts case has %d checks, soak has %d", lost, len(vc.Checks), len(v.Checks))
		}
		var failedLost bool
		for _, ck := range vc.Checks {
			if strings.HasPrefix(ck.Bound, "lost") && ck.Verdict == report.Fail {
				failedLost = true
			}
		}
		want := report.Pass
		if lost > 0 {
			want = report.Fail
		}
		if vc.Verdict != want || vc.Verdict != v.Verdict || failedLost != (lost > 0) {
			t.Errorf("lost %d: verdicts case %s (soak %s), failed lost check %v", lost, vc.Verdict, v.Verdict, failedLost)
		}
	}
}
