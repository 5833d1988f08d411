package soakrun_test

import (
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
		lg := unitLog(t, func(_ int, st *soak.StreamWindow, _ *soak.Window) {
			st.Delivered, st.Lost = 100-lost, lost
		})
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

// TestCasesExcludeFaultWindows: a recovered board outage neither fails
// the stream case (its losses are counted apart) nor hides: the
// verdicts case carries the fault window with its console tail.
func TestCasesExcludeFaultWindows(t *testing.T) {
	lg := unitLog(t, func(i int, st *soak.StreamWindow, w *soak.Window) {
		if i == 2 {
			st.Delivered, st.Lost = 40, 60
			w.Fault = &soak.Fault{Board: "b", Cause: "board b sent no agent window for 30s", From: w.Start, To: w.End,
				Recovery: "power-cycled (recovery 1 of 2)", Console: "[panic] Kernel panic - not syncing: sysrq triggered crash"}
		}
	})
	zero := int64(0)
	two := 2
	b := soak.Bounds{MaxLost: &zero, MaxFaultWindows: &two}
	v := soak.Judge(lg, b)
	cases := soakrun.Cases("soak", "unit", lg, v, b)
	for i := range cases {
		cases[i].Finalize()
	}
	stream, vc := cases[0], cases[len(cases)-1]
	if stream.Verdict != report.Pass || stream.Lost != 0 || stream.Extra[report.ExtraFaultWindowLost] != 60 {
		t.Errorf("stream case: verdict %s, lost %d, extra %v; want pass, 0 lost, 60 lost in fault windows", stream.Verdict, stream.Lost, stream.Extra)
	}
	notes := strings.Join(vc.Notes, "\n")
	if vc.Verdict != report.Pass || vc.Extra[report.ExtraFaultWindows] != 1 || !strings.Contains(notes, "board b sent no agent window") || !strings.Contains(notes, "Kernel panic") {
		t.Errorf("verdicts case: verdict %s, extra %v, notes %q; want pass, 1 fault window, its cause and console", vc.Verdict, vc.Extra, notes)
	}
}

// unitLog writes four one-second windows of board b's "imu" stream (100
// sent and delivered, 5 µs each) to a checkpoint and reads the log back;
// edit changes window i's stream and window before it is written.
func unitLog(t *testing.T, edit func(i int, st *soak.StreamWindow, w *soak.Window)) *soak.Log {
	t.Helper()
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: time.Second})
	t0 := time.Now().Add(-time.Minute)
	for i := range 4 {
		h := report.NewHistogram()
		h.Record(5000)
		st := soak.StreamWindow{Stream: "imu", Sent: 100, Delivered: 100, Histogram: h}
		w := soak.Window{Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second)}
		edit(i, &st, &w)
		w.Agents = []soak.AgentWindow{{Agent: "b", RSSBytes: 8 << 20, Streams: []soak.StreamWindow{st}}}
		if err := cp.Append(&w); err != nil {
			t.Fatal(err)
		}
	}
	cp.Close()
	return readLog(t, path)
}
