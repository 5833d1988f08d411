package steps_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
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
		{steps.ShmCopy.On("iceoryx"), "board-a", "board-b", "a-b-shm"},
		{steps.ShmCopy.On(steps.FastDDSSHM), "board-a", "board-a", "a-b-shm"}, // one board: Fast DDS's SHM never matches across namespaces
		{steps.UDP.On("cyclonedds"), "board-b", "board-c", "b-c-udp"},
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

// TestBeside: each class is hilrig's path first, then every peer of that
// class; intra and the loan path have no peer; peer case names carry the
// middleware, hilrig's stay as they were.
func TestBeside(t *testing.T) {
	got := steps.Beside(steps.Intra, steps.ShmCopy, steps.ShmLoan, steps.UDP)
	var names []string
	for _, p := range got {
		names = append(names, p.MiddlewareName().String()+"/"+p.String())
	}
	want := "hilrig/intra hilrig/shm-copy iceoryx/shm-copy fastdds-shm/shm-copy hilrig/shm-loan hilrig/udp cyclonedds/udp fastdds-udp/udp"
	if s := strings.Join(names, " "); s != want {
		t.Errorf("Beside = %s\nwant     %s", s, want)
	}
	if n := steps.UDP.On("cyclonedds").Named("udp x"); n != "cyclonedds udp x" {
		t.Errorf("peer Named = %q", n)
	}
	if n := steps.UDP.On("hilrig").Named("udp x"); n != "udp x" {
		t.Errorf("hilrig Named = %q", n)
	}
}

// TestAsPeerCase: a peer case loses the rack's bounds (hilrig's) and says
// so; a hilrig case keeps them.
func TestAsPeerCase(t *testing.T) {
	b := report.Bounds{P99: time.Millisecond}
	h := &report.Case{Name: "h", Middleware: "hilrig", Bounds: &b}
	if steps.AsPeerCase(h).Bounds == nil {
		t.Error("hilrig case lost its bounds")
	}
	p := &report.Case{Name: "p", Middleware: "iceoryx", Bounds: &b, Checks: []report.Check{{Bound: "p99"}}}
	steps.AsPeerCase(p)
	if p.Bounds != nil || len(p.Checks) != 0 {
		t.Errorf("peer case kept bounds %v, checks %v", p.Bounds, p.Checks)
	}
	if !slices.Contains(p.Notes, steps.PeerUnjudged) {
		t.Errorf("peer case notes %q do not say it is not judged", p.Notes)
	}
}

// TestRep: a cell run once keeps its case names (and their history); run
// R times, each repetition has its own name and index, and the report
// groups them back into one entry.
func TestRep(t *testing.T) {
	if n, i := steps.Rep("hilrig udp reliable 64B round trip", 1, 1); n != "hilrig udp reliable 64B round trip" || i != 0 {
		t.Errorf("R=1: %q, %d", n, i)
	}
	r := report.NewResult(report.RunInfo{})
	for rep := 1; rep <= 3; rep++ {
		for _, mw := range []string{"hilrig", "cyclonedds"} {
			n, i := steps.Rep(mw+" udp reliable 64B round trip", rep, 3)
			if i != rep || n != fmt.Sprintf("%s udp reliable 64B round trip (rep %d)", mw, rep) {
				t.Errorf("rep %d: %q, %d", rep, n, i)
			}
			c := report.NewCase(&report.Route{Class: report.ClassUDPOneHost}, report.CaseSpec{Suite: "latency", Name: n, Transport: "udp",
				Middleware: kind.Middleware(mw), PayloadBytes: 64, Repetition: i, Method: report.Method{Kind: report.RTTHalf}},
				report.Results{Summary: report.Summary{Count: 1000, P50: int64(1000 * rep), P99: int64(2000 * rep)}})
			r.Cases = append(r.Cases, *c)
		}
	}
	rows := report.CompareMiddlewares(r)
	if len(rows) != 1 || len(rows[0].Entries) != 2 || len(rows[0].Entries[1].Reps) != 3 {
		t.Fatalf("rows %+v, want one row, two entries of three repetitions", rows)
	}
}
