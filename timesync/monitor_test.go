package timesync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

func waitKind(t *testing.T, m *timesync.Monitor, kind timesync.EventKind) timesync.Event {
	t.Helper()
	e, err := waitEvent(context.Background(), m.Events(), time.Now().Add(5*time.Second), func(e timesync.Event) bool { return e.Kind == kind })
	if err != nil {
		t.Fatalf("no %s event: %v", kind, err)
	}
	return e
}

func TestMonitorEvents(t *testing.T) {
	t.Parallel()
	src := timesyncsim.New(nil)
	var callbacks atomic.Int32
	m, err := timesync.NewMonitor([]timesync.Board{{Name: "b1", Source: src, ExpectedGM: timesyncsim.DefaultGM}},
		timesync.MonitorConfig{Period: 5 * time.Millisecond, Bound: time.Microsecond, OnEvent: func(timesync.Event) { callbacks.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if e := waitKind(t, m, timesync.EventLocked); e.Recovered || e.Board != "b1" {
		t.Errorf("first lock event %+v: want not Recovered, board b1", e)
	}
	src.Update(func(s *timesyncsim.State) { s.FreezeIngress = true })
	if e := waitKind(t, m, timesync.EventLockLost); e.Verdict.Cond != timesync.CondIngressStale {
		t.Errorf("lock lost for %s, want ingress-stale", e.Verdict.Cond)
	}
	src.Update(func(s *timesyncsim.State) { s.FreezeIngress = false })
	if e := waitKind(t, m, timesync.EventLocked); !e.Recovered {
		t.Errorf("re-lock event %+v not Recovered", e)
	}
	src.Update(func(s *timesyncsim.State) { s.GM = gmB })
	e := waitKind(t, m, timesync.EventGMChanged)
	if e.PrevGM != timesyncsim.DefaultGM || e.GM != gmB {
		t.Errorf("GM change %+v, want %s → %s", e, timesyncsim.DefaultGM, gmB)
	}
	if locked, v, _ := m.Locked("b1"); locked || v.Cond != timesync.CondWrongGM {
		t.Errorf("after GM change: locked %t %+v, want wrong-gm", locked, v)
	}
	m.Stop()
	log := m.EventLog()
	var kinds []timesync.EventKind
	for _, e := range log {
		kinds = append(kinds, e.Kind)
	}
	want := []timesync.EventKind{timesync.EventLocked, timesync.EventLockLost, timesync.EventLocked, timesync.EventGMChanged, timesync.EventLockLost}
	if len(kinds) != len(want) {
		t.Fatalf("event log %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("event log %v, want %v", kinds, want)
		}
	}
	if int(callbacks.Load()) != len(log) {
		t.Errorf("OnEvent called %d times for %d events", callbacks.Load(), len(log))
	}
	series, err := m.Series("b1")
	if err != nil || len(series) < 5 {
		t.Fatalf("series: %d samples, %v", len(series), err)
	}
	for i := 1; i < len(series); i++ {
		if series[i].At.Before(series[i-1].At) {
			t.Fatalf("series not in time order at %d", i)
		}
	}
	if _, err := m.Series("nope"); err == nil {
		t.Error("Series of an unknown board: no error")
	}
}

// TestMonitorEventChannelBounded: a reader that never reads loses channel
// deliveries, counted, but the event log keeps them all.
func TestMonitorEventChannelBounded(t *testing.T) {
	t.Parallel()
	src := timesyncsim.New(nil)
	m, err := timesync.NewMonitor([]timesync.Board{{Name: "b", Source: src}},
		timesync.MonitorConfig{Period: 2 * time.Millisecond, Bound: time.Microsecond, EventBuffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Start(context.Background())
	defer m.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for len(m.EventLog()) < 6 && time.Now().Before(deadline) {
		n := src.Reads()
		frozen := n%2 == 0
		src.Update(func(s *timesyncsim.State) { s.FreezeIngress = frozen })
		for src.Reads() < n+2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // poll interval
		}
	}
	m.Stop()
	if got := len(m.EventLog()); got < 6 {
		t.Fatalf("only %d events logged", got)
	}
	if m.DroppedEvents() == 0 {
		t.Errorf("no dropped deliveries with a 1-slot channel and %d events", len(m.EventLog()))
	}
	if uint64(len(m.EventLog())) != m.DroppedEvents()+uint64(len(m.Events())) {
		t.Errorf("log %d != dropped %d + buffered %d", len(m.EventLog()), m.DroppedEvents(), len(m.Events()))
	}
}

func TestEvaluateWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ok := func(s float64, off time.Duration) timesync.Sample {
		return timesync.Sample{At: at(s), Locked: true, Offset: off, PathDelay: 2 * time.Microsecond}
	}
	bad := func(s float64) timesync.Sample {
		return timesync.Sample{At: at(s), Cond: timesync.CondIngressStale, Offset: 9 * time.Millisecond}
	}
	withPHC := ok(3, 100)
	withPHC.HasPHC, withPHC.PHCSysOffset, withPHC.PHCSysDelay = true, -50, 20
	tests := []struct {
		name     string
		samples  []timesync.Sample
		from, to float64
		locked   bool
		bound    time.Duration
	}{
		{"bracketed and locked", []timesync.Sample{ok(0, 10), ok(1, -300), ok(2, 20), ok(3, 5)}, 0.5, 2.5, true, 300},
		{"bracketing samples count", []timesync.Sample{ok(0, 700), ok(1, 1), ok(2, 1), ok(3, -800)}, 0.5, 2.5, true, 800},
		{"unlocked sample inside", []timesync.Sample{ok(0, 1), bad(1), ok(2, 1), ok(3, 1)}, 0.5, 2.5, false, 9 * time.Millisecond},
		{"unlocked bracket after end", []timesync.Sample{ok(0, 1), ok(1, 1), bad(3)}, 0.5, 2.5, false, 9 * time.Millisecond},
		{"no sample before start", []timesync.Sample{ok(1, 1), ok(3, 1)}, 0.5, 2.5, false, 0},
		{"no sample after end yet", []timesync.Sample{ok(0, 1), ok(1, 4)}, 0.5, 2.5, false, 4},
		{"sample exactly at the edges", []timesync.Sample{bad(0), ok(1, 3), ok(2, 2), bad(3)}, 1, 2, true, 3},
		{"PHC adds its offset and read window", []timesync.Sample{ok(2, 1), withPHC}, 2.5, 3, true, 170},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bw := timesync.EvaluateWindow(tt.samples, at(tt.from), at(tt.to))
			if bw.Locked != tt.locked || bw.Bound != tt.bound {
				t.Errorf("got locked %t bound %v (%+v), want %t %v", bw.Locked, bw.Bound, bw, tt.locked, tt.bound)
			}
			if !bw.Locked && bw.Reason == "" {
				t.Error("unlocked window without a reason")
			}
		})
	}
}

func TestMonitorWindowSumsBoards(t *testing.T) {
	t.Parallel()
	a := timesyncsim.New(nil)
	b := timesyncsim.New(nil)
	a.Update(func(s *timesyncsim.State) { s.Offset = 300 })
	b.Update(func(s *timesyncsim.State) { s.Offset = -200 })
	m, err := timesync.NewMonitor([]timesync.Board{{Name: "a", Source: a}, {Name: "b", Source: b}},
		timesync.MonitorConfig{Period: 5 * time.Millisecond, Bound: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Start(context.Background())
	defer m.Stop()
	waitKind(t, m, timesync.EventLocked)
	waitKind(t, m, timesync.EventLocked)
	from := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	var wq timesync.WindowQuality
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // poll interval
		wq, err = m.Window(from, from.Add(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if wq.Locked {
			break
		}
	}
	if !wq.Locked || wq.Bound != 500 || len(wq.Boards) != 2 {
		t.Fatalf("window %+v: want locked, bound 500ns over 2 boards", wq)
	}
	if _, err := m.Window(from, from.Add(-time.Second)); err == nil {
		t.Error("reversed window: no error")
	}
	if _, err := m.Window(from, from, "zzz"); err == nil {
		t.Error("unknown board: no error")
	}
}
