package pmc_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/timesync/internal/pmc"
	"github.com/hilrig/hilrig/timesync/internal/pmcsim"
)

// TestSubscriptionCountsPortStateChanges: against the fake ptp4l, every
// port state change between two Takes is counted, in order; a
// subscription ptp4l dropped is seen at the next Take (Lost) and renewed;
// Close unsubscribes.
func TestSubscriptionCountsPortStateChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	srv, err := pmcsim.Start(path, pmcsim.Locked())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sub, err := pmc.Subscribe(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ev := sub.Take(context.Background()); !ev.Alive || ev.Changes != 0 || ev.Lost != 0 {
		t.Fatalf("first Take %+v: want alive, nothing changed", ev)
	}
	for _, st := range []uint8{pmcsim.Listening, pmcsim.Uncalibrated, pmcsim.Slave} {
		srv.Update(func(s *pmcsim.State) { s.PortState = st })
	}
	ev := sub.Take(context.Background())
	if ev.Changes != 3 || ev.States[0] != pmcsim.Listening || ev.States[1] != pmcsim.Uncalibrated || ev.States[2] != pmcsim.Slave || ev.Lost != 0 {
		t.Errorf("Take after 3 changes: %+v, want LISTENING, UNCALIBRATED, SLAVE in order, none lost", ev)
	}
	if ev := sub.Take(context.Background()); ev.Changes != 0 {
		t.Errorf("Take with no change in between: %+v", ev)
	}
	srv.DropSubscribers()
	if ev := sub.Take(context.Background()); ev.Lost == 0 {
		t.Errorf("Take after ptp4l dropped the subscription: %+v, want Lost > 0", ev)
	}
	testkit.Eventually(t, 5*time.Second, "the subscription renewed", func() bool { return srv.Subscribers() == 1 })
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the subscription removed by Close", func() bool { return srv.Subscribers() == 0 })
	if err := sub.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSubscribeRefusedByOldPTP4L: a ptp4l that answers NOT_SUPPORTED is
// ErrManagementError naming the request.
func TestSubscribeRefusedByOldPTP4L(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l.sock")
	st := pmcsim.Locked()
	st.NoSubscribe = true
	srv, err := pmcsim.Start(path, st)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := pmc.Subscribe(path, time.Second); !errors.Is(err, pmc.ErrManagementError) {
		t.Errorf("Subscribe to an old ptp4l: %v, want ErrManagementError", err)
	}
	if _, err := pmc.Subscribe(filepath.Join(t.TempDir(), "none"), time.Second); !errors.Is(err, pmc.ErrNoSocket) {
		t.Errorf("Subscribe to nothing: %v, want ErrNoSocket", err)
	}
}
