package soak_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// judgeKind maps a check of soak.Judge to the running bound kind it
// belongs to ("" for those Running leaves to the end: trends, nothing
// sent).
func judgeKind(c report.Check) string {
	switch {
	case strings.HasPrefix(c.Bound, "lost ") && c.Note != "nothing sent":
		return soak.BoundLost
	case c.Bound == "window max":
		return soak.BoundWindowMax
	case c.Bound == "PTP-unlocked windows":
		return soak.BoundUnlockedWindows
	case strings.HasPrefix(c.Bound, "fault windows"):
		return soak.BoundFaultWindows
	case strings.HasPrefix(c.Bound, "restart recovery"):
		return soak.BoundRestartRecovery
	}
	return ""
}

// TestRunningAgreesWithJudge feeds soaks window by window to a Running
// and, after every window, compares each bound kind with soak.Judge over
// the windows so far: a bound breaks in the window that breaks it, stays
// broken, and the fault and unlocked windows are left out exactly as
// Judge leaves them out.
func TestRunningAgreesWithJudge(t *testing.T) {
	one, zero := 1, int64(0)
	b := soak.Bounds{MaxLost: &zero, MaxLatency: 200 * time.Microsecond, MaxUnlockedWindows: &one, MaxFaultWindows: &one,
		MaxRestartRecovery: time.Second, MaxRSSSlopeKiBPerHour: 1}
	type edit func(i int, w *soak.Window)
	at := func(n int, f func(w *soak.Window)) edit {
		return func(i int, w *soak.Window) {
			if i == n {
				f(w)
			}
		}
	}
	lose := func(w *soak.Window) { w.Agents[0].Streams[0].Lost = 3 }
	slow := func(w *soak.Window) { w.Agents[0].Streams[0].Histogram.Record(int64(time.Millisecond)) }
	unlock := func(w *soak.Window) { w.Agents[0].PTP.Locked = false }
	fault := func(w *soak.Window) {
		w.Agents[0].Streams[0].Lost = 5000
		w.Agents[0].Streams[0].Histogram.Record(int64(5 * time.Second))
		w.Fault = &soak.Fault{Board: "board1", Cause: "sent no agent window for 2s", From: w.Start, To: w.End}
	}
	restart := func(ns time.Duration) func(w *soak.Window) {
		return func(w *soak.Window) {
			w.Agents[0].Events = []soak.Event{{Kind: soak.EventRestart, Target: "sub imu", Recovered: true, RecoveryNs: int64(ns)}}
		}
	}
	for _, tc := range []struct {
		name  string
		edits []edit
		// broken is, per bound kind, the first window that breaks it.
		broken map[string]int
	}{
		{name: "clean, RSS growing (a trend: judged at the end only)"},
		{name: "loss", edits: []edit{at(5, lose)}, broken: map[string]int{soak.BoundLost: 5}},
		{name: "slow window", edits: []edit{at(8, slow)}, broken: map[string]int{soak.BoundWindowMax: 8}},
		{name: "slow window unlocked: excluded", edits: []edit{at(8, slow), at(8, unlock)}},
		{name: "two unlocked windows", edits: []edit{at(3, unlock), at(10, unlock)}, broken: map[string]int{soak.BoundUnlockedWindows: 10}},
		{name: "fault windows: their loss and latency excluded", edits: []edit{at(4, fault), at(12, fault)},
			broken: map[string]int{soak.BoundFaultWindows: 12}},
		{name: "restarts", edits: []edit{at(2, restart(100*time.Millisecond)), at(6, restart(2*time.Second))},
			broken: map[string]int{soak.BoundRestartRecovery: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := soak.NewRunning(b)
			if v := run.Verdict(); v != report.NoBounds || run.Checks() != nil {
				t.Fatalf("before any window: %s %v, want unjudged", v, run.Checks())
			}
			lg := &soak.Log{Header: soak.Header{Started: t0}, StreamKeys: []string{soak.StreamKey("board1", "imu")}}
			for i := range 16 {
				w := window(i, 10<<10, 0, true)
				for _, e := range tc.edits {
					e(i, w)
				}
				w.Agents[0].Streams[0].Summary = w.Agents[0].Streams[0].Histogram.Summary()
				lg.Windows = append(lg.Windows, *w)
				run.Add(w)
				judged := map[string]report.Verdict{}
				for _, c := range soak.Judge(lg, b).Checks {
					if k := judgeKind(c); k != "" && judged[k] != report.Fail {
						judged[k] = c.Verdict
					}
				}
				if _, ok := judged[soak.BoundRestartRecovery]; !ok {
					// Judge has one check per restart; none yet has held.
					judged[soak.BoundRestartRecovery] = report.Pass
				}
				checks := run.Checks()
				if len(checks) != len(soak.RunningBounds) {
					t.Fatalf("window %d: checks %v, want one per bound kind (all are set)", i, checks)
				}
				wantRun := report.Pass
				for _, c := range checks {
					first, breaks := tc.broken[c.Bound]
					want := report.Pass
					if breaks && i >= first {
						want, wantRun = report.Fail, report.Fail
					}
					if c.Verdict != want || judged[c.Bound] != want {
						t.Errorf("window %d: %s running %s, Judge %s, want %s", i, c.Bound, c.Verdict, judged[c.Bound], want)
					}
				}
				if v := run.Verdict(); v != wantRun {
					t.Errorf("window %d: running verdict %s, want %s", i, v, wantRun)
				}
			}
		})
	}
	// Only the bounds set are reported; loss always (nil MaxLost: zero).
	run := soak.NewRunning(soak.Bounds{})
	run.Add(window(0, 0, 0, true))
	if cs := run.Checks(); len(cs) != 1 || cs[0].Bound != soak.BoundLost || cs[0].Verdict != report.Pass {
		t.Errorf("zero bounds: %v, want only the loss check, passing", cs)
	}
}
