package timesyncsim_test

import (
	"context"
	"errors"
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
