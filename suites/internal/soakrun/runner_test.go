package soakrun_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// restarter swaps a synthetic subscriber for a fresh one.
type restarter struct {
	calls int
	fail  bool
}

func (r *restarter) Restart(_ context.Context, t *soakrun.Track) (*soakrun.Track, []agentproto.Window, time.Time, error) {
	r.calls++
	if r.fail {
		return nil, nil, time.Time{}, errors.New("agent gone")
	}
	left := t.Src.Take()
	nt := *t
	if t.Role == agentproto.Subscriber {
		nt.Src = soakrun.NewSynth(500, 20e3, uint64(r.calls)+10).Sub()
	}
	return &nt, left, time.Now(), nil
}

func TestRunnerCheckpointsEveryWindowAndRecordsRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	cp, err := soak.Create(path, soak.Header{Name: "unit", Window: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	syn := soakrun.NewSynth(2000, 30e3, 1)
	var out bytes.Buffer
	rs := &restarter{}
	var durable []int
	r := &soakrun.Runner{Name: "unit", Window: 50 * time.Millisecond, Progress: 100 * time.Millisecond, Until: time.Now().Add(600 * time.Millisecond),
		Checkpoint: cp, Out: &out, Churn: 200 * time.Millisecond, Restarter: rs, OnWindow: func(w *soak.Window) { durable = append(durable, w.Index) }}
	tracks := []*soakrun.Track{
		{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()},
		{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	if err := r.Run(context.Background(), tracks); err != nil {
		t.Fatal(err)
	}
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Windows) != len(durable) || len(durable) < 8 {
		t.Fatalf("file has %d windows, runner reported %d durable (want ≥ 8 of 50 ms in 600 ms)", len(lg.Windows), len(durable))
	}
	var restarts, recovered int
	var delivered int64
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				delivered += s.Delivered
				if s.Lost != 0 {
					t.Errorf("window %d: lost %d", w.Index, s.Lost)
				}
			}
			for _, e := range a.Events {
				if e.Kind == soak.EventRestart {
					restarts++
					if e.Recovered {
						recovered++
					}
				}
			}
		}
	}
	st := r.Status()
	if st.Delivered != delivered || delivered == 0 {
		t.Errorf("status delivered %d, file %d", st.Delivered, delivered)
	}
	if rs.calls < 2 || restarts != rs.calls || recovered != restarts {
		t.Errorf("restarts: %d calls, %d events, %d recovered", rs.calls, restarts, recovered)
	}
	if !strings.Contains(out.String(), "unit: elapsed") {
		t.Errorf("no progress line in %q", out.String())
	}
	v := soak.Judge(lg, soak.Bounds{MaxRestartRecovery: time.Second})
	if v.Verdict != report.Pass {
		t.Errorf("verdict %s: %v", v.Verdict, soakrun.FailedChecks(v))
	}
}

func TestRunnerFailsOnRestartErrorKeepingClosedWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	cp, err := soak.Create(path, soak.Header{Name: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	syn := soakrun.NewSynth(1000, 30e3, 2)
	var durable int
	rs := &restarter{fail: true}
	r := &soakrun.Runner{Window: 30 * time.Millisecond, Progress: time.Hour, Until: time.Now().Add(time.Second), Checkpoint: cp,
		Churn: 150 * time.Millisecond, Restarter: rs, OnWindow: func(*soak.Window) { durable++ }}
	err = r.Run(context.Background(), []*soakrun.Track{{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()}})
	if !errors.Is(err, soakrun.ErrFeed) || !strings.Contains(err.Error(), "agent gone") || rs.calls != 1 {
		t.Fatalf("Run = %v after %d restarts, want ErrFeed naming the cause after one", err, rs.calls)
	}
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every window closed before the failure is on disk (how many depends
	// on the scheduler: the churn tick is the first at or after 150 ms).
	if len(lg.Windows) != durable {
		t.Fatalf("file holds %d windows, %d were closed before the failure", len(lg.Windows), durable)
	}
}

func TestPlanProfiles(t *testing.T) {
	cfg, err := fixtures.ParseConfig("ginkgo.config", []byte(`
payload_sizes: [64]
rates_hz: [1000]
messages: 100
soak: {duration: 72h, short_duration: 30s, checkpoint: 10s}
traffic_mix:
  - {transport: shm, payload: 64, rate_hz: 1000}
  - {transport: udp, payload: 4KiB, rate_hz: 100}
  - {transport: intra, payload: 64, rate_hz: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		profile    string
		dur        time.Duration
		rate0      float64
		trends     bool
		wantWindow time.Duration
	}{
		{soakrun.ProfileSmoke, 30 * time.Second, 1000, false, 3 * time.Second},
		{soakrun.ProfileFull, 72 * time.Hour, 1000, true, 10 * time.Second},
		{soakrun.ProfileAccelerated, time.Hour, 10000, true, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			p, err := soakrun.NewPlan(tt.profile, cfg, rack, prof)
			if err != nil {
				t.Fatal(err)
			}
			if p.Duration != tt.dur || p.Flows[0].RateHz != tt.rate0 || p.TrendsAsserted != tt.trends || p.Window != tt.wantWindow {
				t.Errorf("plan %s", p)
			}
			for _, f := range p.Flows {
				if f.Transport == "intra" {
					t.Errorf("intra flow %s planned", f.Name)
				}
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), "intra") {
				t.Errorf("notes %q do not say intra is not run", p.Notes)
			}
		})
	}
	if _, err := soakrun.NewPlan("weekly", cfg, rack, prof); !errors.Is(err, soakrun.ErrPlan) {
		t.Errorf("unknown profile: %v", err)
	}
}

// gapSource records the longest time between two Takes of the runner.
type gapSource struct {
	Src     soakrun.Source
	last    time.Time
	maxGap  time.Duration
	maxSize int
}

func (g *gapSource) Take() []agentproto.Window {
	now := time.Now()
	if !g.last.IsZero() {
		g.maxGap = max(g.maxGap, now.Sub(g.last))
	}
	g.last = now
	ws := g.Src.Take()
	g.maxSize = max(g.maxSize, len(ws))
	return ws
}

// TestRunnerDrainsBetweenCheckpoints: the controller memory finding. The
// runner took the endpoints' windows only when a checkpoint window closed,
// so the rig buffered a checkpoint period of agent windows (each with its
// histogram) per endpoint: with the accelerated soak's 3–6 min windows and
// 250 ms agent windows, hundreds of MiB. It must drain every DefaultDrain.
func TestRunnerDrainsBetweenCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	const window = time.Second
	cp, err := soak.Create(path, soak.Header{Name: "unit", Window: window})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	syn := soakrun.NewSynth(1000, 30e3, 1)
	sub := &gapSource{Src: syn.Sub()}
	r := &soakrun.Runner{Name: "unit", Window: window, Progress: time.Hour, Until: time.Now().Add(2200 * time.Millisecond), Checkpoint: cp}
	tracks := []*soakrun.Track{
		{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: sub},
		{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	if err := r.Run(context.Background(), tracks); err != nil {
		t.Fatal(err)
	}
	if d := soakrun.DefaultDrain(window, 0); sub.maxGap > d+400*time.Millisecond {
		t.Errorf("longest time between two drains %v with a %v checkpoint window: want about %v", sub.maxGap, window, d)
	}
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var delivered, sent int64
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				delivered += s.Delivered
				sent = max(sent, s.Sent)
			}
		}
	}
	if delivered < 1500 || len(lg.Windows) < 2 {
		t.Errorf("%d windows, %d delivered: the drained windows were not folded into the checkpoint", len(lg.Windows), delivered)
	}
}

// TestRigMaxWindowsIndependentOfCheckpoint: the per-endpoint buffer the
// soak asks the rig for does not grow with the checkpoint window.
func TestRigMaxWindowsIndependentOfCheckpoint(t *testing.T) {
	a := &soakrun.Plan{Window: 10 * time.Second, AgentWindow: 250 * time.Millisecond}
	b := &soakrun.Plan{Window: 6 * time.Minute, AgentWindow: 250 * time.Millisecond}
	if a.RigMaxWindows() != b.RigMaxWindows() || b.RigMaxWindows() > 400 {
		t.Errorf("RigMaxWindows %d (10 s window) vs %d (6 min window): want equal and ≤ 400", a.RigMaxWindows(), b.RigMaxWindows())
	}
}

// hangingSource stops producing windows after its first n Takes (a board
// frozen mid-soak: SIGSTOPped, panicked, or off the network).
type hangingSource struct {
	Src   soakrun.Source
	n     int
	takes int
}

func (h *hangingSource) Take() []agentproto.Window {
	h.takes++
	if h.takes > h.n {
		return nil
	}
	return h.Src.Take()
}

// TestHungBoardFailsPromptlyNamingIt: without power control, a board that
// stops sending agent windows ends the soak within the heartbeat budget
// (not at its planned end) with a verdict naming the board and the
// cause, and the checkpoint holds the event with the console tail.
func TestHungBoardFailsPromptlyNamingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	cp, err := soak.Create(path, soak.Header{Name: "unit", Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	syn := soakrun.NewSynth(1000, 30e3, 1)
	r := &soakrun.Runner{Name: "unit", Window: time.Second, Drain: 50 * time.Millisecond, Progress: time.Hour, Until: time.Now().Add(30 * time.Second),
		Checkpoint: cp, Heartbeat: 400 * time.Millisecond,
		ConsoleTail: func(board string) string { return "[  42.0] Kernel panic - not syncing: sysrq triggered crash" }}
	tracks := []*soakrun.Track{
		{Agent: "board-b", Flow: "imu", Role: agentproto.Subscriber, Src: &hangingSource{Src: syn.Sub(), n: 5}},
		{Agent: "board-a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	start := time.Now()
	err = r.Run(context.Background(), tracks)
	if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board board-b sent no agent window") || !strings.Contains(err.Error(), "Kernel panic") {
		t.Fatalf("Run: %v; want ErrBoardLost naming board-b with the console tail", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the soak ran %v after the board hung: want it to stop within the heartbeat budget", d)
	}
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var events int
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			for _, e := range a.Events {
				if e.Kind == soak.EventAgentError && e.Target == "board board-b" {
					events++
				}
			}
		}
	}
	if events != 1 {
		t.Errorf("%d board-lost events in the checkpoint, want 1", events)
	}
}

// TestPlanOnMiddleware: a peer's plan keeps the flows its route accepts,
// renamed and placed where the route says, notes the others, and fails
// when none is left; Shorten rescales window, churn and warm-up.
func TestPlanOnMiddleware(t *testing.T) {
	cfg, err := fixtures.ParseConfig("ginkgo.config", []byte(`
payload_sizes: [64]
rates_hz: [1000]
messages: 100
soak: {duration: 72h, short_duration: 30s, checkpoint: 10s}
traffic_mix:
  - {transport: shm, payload: 64, rate_hz: 1000}
  - {transport: udp, payload: 4KiB, rate_hz: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := soakrun.NewPlan(soakrun.ProfileSmoke, cfg, rack, prof)
	if err != nil {
		t.Fatal(err)
	}
	shmOnly := func(tr fixtures.Transport) (string, string, string, error) {
		if tr != fixtures.Shm {
			return "", "", "", errors.New("not shm")
		}
		return "board-a", "board-a", "a-b-shm", nil
	}
	q, err := p.OnMiddleware("fastdds-shm", shmOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Flows) != 1 {
		t.Fatalf("flows %+v, want the shm one", q.Flows)
	}
	f := q.Flows[0]
	if f.Middleware != "fastdds-shm" || f.From != "board-a" || f.To != "board-a" || !strings.HasPrefix(f.Name, "fastdds-shm-shm-") {
		t.Errorf("flow %+v", f)
	}
	if len(p.Flows) < 2 || p.Flows[0].Middleware != "" {
		t.Errorf("OnMiddleware changed the original plan: %+v", p.Flows)
	}
	if !slices.ContainsFunc(q.Notes, func(n string) bool { return strings.Contains(n, "not run on fastdds-shm") }) {
		t.Errorf("no note for the dropped udp flow: %q", q.Notes)
	}
	if _, err := p.OnMiddleware("x", func(fixtures.Transport) (string, string, string, error) { return "", "", "", errors.New("no") }); !errors.Is(err, soakrun.ErrPlan) {
		t.Errorf("no flow left: %v, want ErrPlan", err)
	}
	q.Shorten(10 * time.Second)
	if q.Duration != 10*time.Second || q.Window != time.Second || q.Churn != 10*time.Second/3 || q.Bounds.WarmUp > 2*time.Second {
		t.Errorf("shortened: duration %v window %v churn %v warm-up %v", q.Duration, q.Window, q.Churn, q.Bounds.WarmUp)
	}
}
