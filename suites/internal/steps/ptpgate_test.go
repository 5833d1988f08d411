package steps_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

func window(ep string, ix uint64, from, to time.Time, n int64, ns int64) agentproto.Window {
	h := report.NewHistogram()
	h.RecordN(ns, n)
	return agentproto.Window{Endpoint: ep, Index: ix, StartNs: from.UnixNano(), EndNs: to.UnixNano(), Received: uint64(n), Latency: h}
}

// TestGateWindows scripts board-a's ptp4l through locked (offset 300 ns),
// unlocked (LISTENING, 50 µs) and locked again (700 ns) while board-b
// stays locked at -200 ns, then feeds windows placed on the Monitor's own
// polls: the windows touching an unlocked poll (or starting before the
// first poll) are excluded with exactly their samples, the rest merged,
// and the uncertainty is the largest included bound, 700+200 ns.
func TestGateWindows(t *testing.T) {
	a := timesyncsim.New(&timesyncsim.Options{Initial: &timesyncsim.State{PortState: timesync.PortStateSlave,
		GM: timesyncsim.DefaultGM, GMPresent: true, MeanPathDelay: 2 * time.Microsecond, StepsRemoved: 1, Offset: 300}})
	bst := timesyncsim.Locked()
	bst.Offset = -200
	b := timesyncsim.New(&timesyncsim.Options{Identity: 0x02000afffee90003, Initial: &bst})
	mon, err := timesync.NewMonitor([]timesync.Board{{Name: "board-a", Source: a}, {Name: "board-b", Source: b}},
		timesync.MonitorConfig{Period: 2 * time.Millisecond, Bound: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mon.Stop)
	// polls returns the times of board's polls with that lock and offset
	// after t.
	polls := func(board string, locked bool, off time.Duration, after time.Time) []time.Time {
		s, err := mon.Series(board)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for _, x := range s {
			if x.Locked == locked && x.Offset == off && x.At.After(after) {
				out = append(out, x.At)
			}
		}
		return out
	}
	// board-b's first poll is unlocked (nothing to compare ingress with):
	// the scripted windows start once it is locked.
	waitFor(t, "board-b locked", func() bool { return len(polls("board-b", true, -200, time.Time{})) >= 1 })
	bLocked := polls("board-b", true, -200, time.Time{})[0]
	waitFor(t, "4 locked polls at 300ns", func() bool { return len(polls("board-a", true, 300, bLocked)) >= 4 })
	a.Update(func(s *timesyncsim.State) { s.PortState, s.Offset = timesync.PortStateListening, 50*time.Microsecond })
	waitFor(t, "3 unlocked polls", func() bool { return len(polls("board-a", false, 50*time.Microsecond, bLocked)) >= 3 })
	a.Update(func(s *timesyncsim.State) { s.PortState, s.Offset = timesync.PortStateSlave, 700 })
	waitFor(t, "4 locked polls at 700ns", func() bool { return len(polls("board-a", true, 700, bLocked)) >= 4 })
	// board-b must also have polled after the last window ends.
	tEnd := time.Now()
	waitFor(t, "board-b polled after the script", func() bool { return len(polls("board-b", true, -200, tEnd)) >= 1 })
	mon.Stop()

	sa, _ := mon.Series("board-a")
	lock300 := polls("board-a", true, 300, bLocked)
	unl := polls("board-a", false, 50*time.Microsecond, bLocked)
	lock700 := polls("board-a", true, 700, bLocked)
	// Consecutive locked polls of one run: nothing unlocked between them.
	wins := [][]agentproto.Window{{
		window("sub0", 0, sa[0].At.Add(-time.Second), sa[0].At, 11, 5_000), // before the first poll: excluded
		window("sub0", 1, lock300[0], lock300[2], 100, 10_000),
		window("sub0", 2, lock300[len(lock300)-1], lock700[0], 37, 1_000_000), // spans the unlocked polls: excluded
		window("sub0", 3, unl[0], unl[1], 5, 2_000_000),                       // inside them: excluded
		window("sub0", 4, lock700[1], lock700[3], 50, 20_000),
	}, {
		window("sub1", 0, lock300[1], lock300[3], 7, 15_000),
	}}
	finals := []*agentproto.Final{{Endpoint: "sub0", Latency: report.NewHistogram()}, {Endpoint: "sub1", Latency: report.NewHistogram()}}
	for i, ws := range wins {
		for _, w := range ws {
			finals[i].Latency.Merge(w.Latency)
		}
	}
	c := &report.Case{Histogram: finals[0].Latency.Clone(), Excluded: 2}
	c.Histogram.Merge(finals[1].Latency)
	res, err := steps.GateWindows(c, wins, finals, mon, "board-a", "board-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 6 || res.ExcludedWindows != 3 || res.ExcludedSamples != 11+37+5 {
		t.Errorf("gate %+v: want 6 windows, 3 excluded, 53 samples", res)
	}
	if c.Excluded != 2+53 {
		t.Errorf("Case.Excluded = %d, want 55 (2 before + 53)", c.Excluded)
	}
	if c.Method.UncertaintyNs != 900 {
		t.Errorf("UncertaintyNs = %d, want 900 (700 + 200)", c.Method.UncertaintyNs)
	}
	if s := c.Histogram.Summary(); s.Count != 157 || s.Max >= 1_000_000 {
		t.Errorf("gated histogram %+v: want the 157 included samples, none of the excluded ≥1ms ones", s)
	}
	if n := c.Notes; len(n) != 1 || !strings.Contains(n[0], "3 of 6 window(s) not locked") || !strings.Contains(n[0], "53 sample(s) excluded") || !strings.Contains(n[0], "±900ns") {
		t.Errorf("notes %q: want the exclusion and the uncertainty recorded", n)
	}

	// A window missing from the buffer: nothing can be vetted, c untouched.
	finals[1].Latency.RecordN(1, 3)
	c2 := &report.Case{Histogram: report.NewHistogram()}
	if _, err := steps.GateWindows(c2, wins, finals, mon, "board-a", "board-b"); !errors.Is(err, steps.ErrGateIncomplete) {
		t.Errorf("incomplete windows: %v, want ErrGateIncomplete", err)
	}
	if c2.Excluded != 0 || len(c2.Notes) != 0 {
		t.Errorf("failed gate changed the case: %+v", c2)
	}
	// An unknown board is an error naming it.
	if _, err := steps.GateWindows(&report.Case{}, wins, nil, mon, "board-z"); err == nil || !strings.Contains(err.Error(), "board-z") {
		t.Errorf("unknown board: %v", err)
	}
}
