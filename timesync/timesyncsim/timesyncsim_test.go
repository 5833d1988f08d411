package timesyncsim_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
	"github.com/hilrig/hilrig/timesync/timesynctest"
)

func TestConformance(t *testing.T) {
	timesynctest.Run(t, func(t *testing.T) timesync.Source { return timesyncsim.New(nil) },
		&timesynctest.Options{LockWithin: 5 * time.Second, Period: 10 * time.Millisecond})
}

func TestScriptedStates(t *testing.T) {
	src := timesyncsim.New(nil)
	ctx := context.Background()
	a, _ := src.Status(ctx)
	src.Update(func(s *timesyncsim.State) { s.FreezeIngress = true })
	b, _ := src.Status(ctx)
	c, _ := src.Status(ctx)
	if b.LastSyncIngress != c.LastSyncIngress || b.LastSyncIngress.Ns <= a.LastSyncIngress.Ns-1 {
		t.Errorf("frozen ingress moved: %v %v %v", a.LastSyncIngress, b.LastSyncIngress, c.LastSyncIngress)
	}
	boom := errors.New("boom")
	src.Update(func(s *timesyncsim.State) { s.Err = boom })
	if _, err := src.Status(ctx); !errors.Is(err, boom) {
		t.Errorf("err = %v, want scripted error", err)
	}
	src.Set(timesyncsim.State{PortState: timesync.PortStateListening})
	if st, _ := src.Status(ctx); st.PortState != timesync.PortStateListening {
		t.Errorf("state %v, want LISTENING", st.PortState)
	}
}

// TestMeasurementsAndStaleOffsets: every Sync is a new measurement (the
// offset alternates with its 1 ns neighbour towards zero, starting exact
// after a script step), so a Tracker locks; HoldOffset and ClearCurrent
// script ptp4l's stale offsets after a GM restart and a link flap, which
// a Tracker must not call locked.
func TestMeasurementsAndStaleOffsets(t *testing.T) {
	ctx := context.Background()
	st := timesyncsim.Locked()
	st.Offset = 300
	src := timesyncsim.New(&timesyncsim.Options{Initial: &st})
	var offs []time.Duration
	tr := timesync.NewTracker(timesyncsim.DefaultGM, time.Microsecond, nil)
	var v timesync.Verdict
	for range 4 {
		s, _ := src.Status(ctx)
		offs = append(offs, s.Offset)
		if s.CurrentOffset != s.Offset {
			t.Errorf("CURRENT_DATA_SET offset %v ≠ %v", s.CurrentOffset, s.Offset)
		}
		v = tr.Observe(s, nil)
	}
	if want := []time.Duration{300, 299, 300, 299}; !slices.Equal(offs, want) {
		t.Errorf("offsets %v, want %v", offs, want)
	}
	if !v.Locked {
		t.Fatalf("fresh measurements not locked: %+v", v)
	}
	for _, tc := range []struct {
		name   string
		script func(*timesyncsim.State)
	}{
		{"HoldOffset", func(s *timesyncsim.State) { s.HoldOffset = true }},
		{"ClearCurrent", func(s *timesyncsim.State) { s.ClearCurrent = true }},
	} {
		src.Update(func(s *timesyncsim.State) { s.PortState = timesync.PortStateListening })
		tr.Observe(src.Status(ctx))
		src.Update(func(s *timesyncsim.State) { s.PortState = timesync.PortStateSlave; tc.script(s) })
		for i := range 5 {
			if v := tr.Observe(src.Status(ctx)); v.Cond != timesync.CondOffsetStale {
				t.Errorf("%s poll %d: %+v, want offset-stale", tc.name, i, v)
			}
		}
		src.Update(func(s *timesyncsim.State) { s.HoldOffset, s.ClearCurrent = false, false })
		for range 3 {
			v = tr.Observe(src.Status(ctx))
		}
		if !v.Locked {
			t.Errorf("%s: not locked again once measuring: %+v", tc.name, v)
		}
	}
}
