package steps_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

func simRack(t *testing.T, env fixtures.SimEnv) *fixtures.Rack {
	t.Helper()
	rack, err := fixtures.SimRackFor(env)
	if err != nil {
		t.Fatal(err)
	}
	return rack
}

func TestRoute(t *testing.T) {
	rack := simRack(t, fixtures.SimEnv{Root: true})
	tests := []struct {
		transport      steps.Path
		from, to, link string
	}{
		{steps.Intra, "board-a", "board-a", ""},
		{steps.ShmCopy, "board-a", "board-b", "a-b-shm"},
		{steps.ShmLoan, "board-a", "board-b", "a-b-shm"},
		{steps.UDP, "board-b", "board-c", "b-c-udp"},
	}
	for _, tt := range tests {
		from, to, link, err := steps.Route(rack, tt.transport)
		if err != nil || from != tt.from || to != tt.to || link != tt.link {
			t.Errorf("Route(%s) = %s, %s, %s, %v; want %s, %s, %s", tt.transport, from, to, link, err, tt.from, tt.to, tt.link)
		}
	}
	if _, _, _, err := steps.Route(rack, steps.Path{Transport: "carrier-pigeon"}); err == nil {
		t.Error("Route of an unknown transport succeeded")
	}
	rack.Links = nil
	if _, _, _, err := steps.Route(rack, steps.UDP); !errors.Is(err, steps.ErrNoLink) {
		t.Errorf("Route(udp) on a rack without links: %v, want ErrNoLink", err)
	}
}

func TestMethod(t *testing.T) {
	rack := simRack(t, fixtures.SimEnv{Root: true})
	m := steps.Method(rack, "board-b", "board-c") // netns boards: one kernel
	if m.Kind != report.OneWay || !strings.Contains(m.Clocks, "CLOCK_MONOTONIC of one kernel") || m.UncertaintyNs <= 0 {
		t.Errorf("same-host method %+v: want one-way on one CLOCK_MONOTONIC with the clock-read uncertainty", m)
	}
	rack.Boards[1].Reach = fixtures.Reach{Kind: fixtures.ReachSSH, User: "root", Host: "10.0.0.2", Port: 22}
	rack.Boards[1].SSH = &fixtures.SSH{KeyFile: "k", KnownHosts: "kh"}
	m = steps.Method(rack, "board-a", "board-b")
	if !strings.Contains(m.Clocks, "CLOCK_REALTIME of board-a and board-b") || !strings.Contains(m.Clocks, "NOT synchronised") {
		t.Errorf("cross-host method without ptp: %q", m.Clocks)
	}
}

func TestSizeName(t *testing.T) {
	for n, want := range map[int]string{64: "64B", 4096: "4KiB", 1 << 20: "1MiB", 1000: "1000B"} {
		if got := steps.SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWakeupFloor(t *testing.T) {
	h, err := steps.WakeupFloor(context.Background(), time.Millisecond, 50)
	if err != nil {
		t.Fatal(err)
	}
	s := h.Summary()
	if s.Count != 50 || s.Min < 0 || s.Clamped != 0 {
		t.Fatalf("floor %+v: want 50 non-negative samples", s)
	}
	if _, err := steps.WakeupFloor(context.Background(), 0, 1); err == nil {
		t.Error("period 0 accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := steps.WakeupFloor(ctx, time.Millisecond, 1000); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled floor: %v, want context.Canceled", err)
	}
}
