package steps_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

func TestHalveHistogram(t *testing.T) {
	h := report.NewHistogram()
	for i := int64(1); i <= 10000; i++ {
		h.Record(i * 100) // 100 ns .. 1 ms
	}
	half := steps.HalveHistogram(h)
	if half.Count() != h.Count() {
		t.Fatalf("count %d, want %d", half.Count(), h.Count())
	}
	for _, q := range []float64{1, 50, 99, 99.9, 100} {
		want, got := float64(h.ValueAtQuantile(q))/2, float64(half.ValueAtQuantile(q))
		if math.Abs(got-want) > 0.002*want+1 {
			t.Errorf("p%g: %v, want %v (half of %d)", q, got, want, h.ValueAtQuantile(q))
		}
	}
	if steps.HalveHistogram(nil) != nil {
		t.Error("HalveHistogram(nil) != nil")
	}
}

// openSimRig opens the embedded sim rack as a suite would.
func openSimRig(t *testing.T, rack *fixtures.Rack) *steps.Env {
	t.Helper()
	prof, err := rack.Profile("sim-2core")
	if err != nil {
		t.Fatal(err)
	}
	tc := &harness.TestContext{Suite: "test", Rack: rack, Profile: prof, Config: &fixtures.Config{Window: 100 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // may build hilrig
	defer cancel()
	env, err := steps.Open(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Rig.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return env
}

// TestRoundTripBetweenBoards: on the sim rack every transport's round
// trip runs pinger and echo on the boards the one-way cases use, counts
// every ping, and reports RTT/2 on the pinging board's clock.
func TestRoundTripBetweenBoards(t *testing.T) {
	rack := simRack(t, fixtures.DetectSimEnv())
	env := openSimRig(t, rack)
	const n, warm = 300, 30
	for _, tr := range steps.AllTransports {
		t.Run(tr.String(), func(t *testing.T) {
			if tr == steps.UDP && netns.Available() != nil {
				t.Skip("udp between namespaces needs root")
			}
			from, to, _, err := steps.Route(rack, tr)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := steps.RoundTrip(ctx, env, tr.String()+" rt", tr, true, 64, n)
			if err != nil {
				t.Fatal(err)
			}
			if c.Method.Kind != report.RTTHalf || !strings.Contains(c.Method.Clocks, "pinging board ("+from+")") {
				t.Errorf("method %+v", c.Method)
			}
			if c.Sent != n+warm || c.Delivered != n+warm || c.Lost != 0 || c.Summary.Count != n || c.Summary.Min <= 0 {
				t.Errorf("sent %d delivered %d lost %d summary %+v", c.Sent, c.Delivered, c.Lost, c.Summary)
			}
			if p50 := c.Extra[report.ExtraRTTP50]; math.Abs(p50-2*float64(c.Summary.P50)) > 0.01*p50 {
				t.Errorf("RTT p50 %v ns is not twice the RTT/2 p50 %d ns", p50, c.Summary.P50)
			}
			where := "pinger on " + from + ", echo on " + to
			if tr == steps.Intra {
				where = "pinger and echo in the one agent on " + from
			}
			if notes := strings.Join(c.Notes, "\n"); !strings.Contains(notes, where) || strings.Contains(notes, "FALLBACK") {
				t.Errorf("notes do not say %q:\n%s", where, notes)
			}
			if c.Bounds == nil || c.Verdict != report.Pass {
				t.Errorf("verdict %s checks %+v", c.Verdict, c.Checks)
			}
			t.Logf("%s RTT/2 %s → %s: %s (RTT p50 %s)", tr, from, to, c.Summary.Line(), report.FormatNs(int64(c.Extra[report.ExtraRTTP50])))
		})
	}
}

// TestRoundTripFallbackOnOneBoard: a rack of one board has no pair to
// ping between, so shm falls back to the controller-host ping-pong and
// says so; intra still runs in the board's agent.
func TestRoundTripFallbackOnOneBoard(t *testing.T) {
	rack, err := fixtures.SimRackFor(fixtures.SimEnv{})
	if err != nil {
		t.Fatal(err)
	}
	rack.Boards = rack.Boards[:1]
	rack.Links = nil // a link needs two boards
	rack.DUTs = nil  // they run on the boards removed
	rack.Instruments.Scope = nil
	rack.Capabilities = nil
	rack.PTP = nil
	env := openSimRig(t, rack)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := steps.RoundTrip(ctx, env, "shm rt", steps.ShmCopy, true, 64, 100)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(c.Notes, "\n"); !strings.Contains(notes, "FALLBACK") || !strings.Contains(c.Method.Clocks, "controller host") {
		t.Errorf("fallback not said: %s\n%s", c.Method, notes)
	}
	if c.Summary.Count != 100 || c.Summary.P50 <= 0 {
		t.Errorf("summary %+v", c.Summary)
	}
	c, err = steps.RoundTrip(ctx, env, "intra rt", steps.Intra, true, 64, 100)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(c.Notes, "\n"); strings.Contains(notes, "FALLBACK") || c.Lost != 0 || c.Summary.Count != 100 {
		t.Errorf("intra on one board: lost %d summary %+v notes %s", c.Lost, c.Summary, notes)
	}
}
