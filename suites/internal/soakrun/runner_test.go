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
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: 50 * time.Millisecond})
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
	lg := readLog(t, path)
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
	cp, path := newCheckpoint(t, soak.Header{Name: "unit"})
	syn := soakrun.NewSynth(1000, 30e3, 2)
	var durable int
	rs := &restarter{fail: true}
	r := &soakrun.Runner{Window: 30 * time.Millisecond, Progress: time.Hour, Until: time.Now().Add(time.Second), Checkpoint: cp,
		Churn: 150 * time.Millisecond, Restarter: rs, OnWindow: func(*soak.Window) { durable++ }}
	err := r.Run(context.Background(), []*soakrun.Track{{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()}})
	if !errors.Is(err, soakrun.ErrFeed) || !strings.Contains(err.Error(), "agent gone") || rs.calls != 1 {
		t.Fatalf("Run = %v after %d restarts, want ErrFeed naming the cause after one", err, rs.calls)
	}
	lg := readLog(t, path)
	// Every window closed before the failure is on disk (how many depends
	// on the scheduler: the churn tick is the first at or after 150 ms).
	if len(lg.Windows) != durable {
		t.Fatalf("file holds %d windows, %d were closed before the failure", len(lg.Windows), durable)
	}
}

func TestPlanProfiles(t *testing.T) {
	cfg, rack, prof := planInputs(t, shmUDPPlan+`
  - {transport: intra, payload: 64, rate_hz: 10}
`)
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
	const window = time.Second
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: window})
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
	lg := readLog(t, path)
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
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: time.Second})
	syn := soakrun.NewSynth(1000, 30e3, 1)
	r := &soakrun.Runner{Name: "unit", Window: time.Second, Drain: 50 * time.Millisecond, Progress: time.Hour, Until: time.Now().Add(30 * time.Second),
		Checkpoint: cp, Heartbeat: 400 * time.Millisecond,
		ConsoleTail: func(board string) string { return "[  42.0] Kernel panic - not syncing: sysrq triggered crash" }}
	tracks := []*soakrun.Track{
		{Agent: "board-b", Flow: "imu", Role: agentproto.Subscriber, Src: &hangingSource{Src: syn.Sub(), n: 5}},
		{Agent: "board-a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	start := time.Now()
	err := r.Run(context.Background(), tracks)
	if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board board-b sent no agent window") || !strings.Contains(err.Error(), "Kernel panic") {
		t.Fatalf("Run: %v; want ErrBoardLost naming board-b with the console tail", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the soak ran %v after the board hung: want it to stop within the heartbeat budget", d)
	}
	lg := readLog(t, path)
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

// recoverer is a fake power control: Recover replaces the lost board's
// tracks with fresh ones on the same stream (hanging again after
// hangAfter Takes when hangAfter > 0).
type recoverer struct {
	noPower   error
	hangAfter int
	calls     []string
}

func (f *recoverer) PowerControl(string) error { return f.noPower }

func (f *recoverer) Recover(_ context.Context, board string, tracks []*soakrun.Track) ([]*soakrun.Track, error) {
	f.calls = append(f.calls, board)
	out := append([]*soakrun.Track(nil), tracks...)
	for i, t := range tracks {
		if t.Agent != board {
			continue
		}
		// The board's endpoint comes back on the same stream (its
		// publisher on board-a kept running).
		nt := *t
		src := t.Src
		if h, ok := src.(*hangingSource); ok {
			n := 1 << 30
			if f.hangAfter > 0 {
				n = f.hangAfter
			}
			src = &hangingSource{Src: h.Src, n: n}
		}
		nt.Src = src
		out[i] = &nt
	}
	return out, nil
}

// runRecovery runs a 3 s soak whose board-b subscriber hangs after 5
// drains, with rec as its power control and a budget of budget.
func runRecovery(t *testing.T, rec soakrun.Recoverer, budget int, panicLine func(string, time.Time) string) (*soak.Log, *soakrun.Runner, time.Duration, error) {
	t.Helper()
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: 500 * time.Millisecond})
	syn := soakrun.NewSynth(1000, 30e3, 1)
	r := &soakrun.Runner{Name: "unit", Window: 500 * time.Millisecond, Drain: 50 * time.Millisecond, Progress: time.Hour,
		Until: time.Now().Add(3 * time.Second), Checkpoint: cp, Heartbeat: 400 * time.Millisecond,
		ConsoleTail:  func(board string) string { return "[  42.0] Kernel panic - not syncing: sysrq triggered crash" },
		ConsolePanic: panicLine, Recoverer: rec, Recoveries: budget}
	sub := soakrun.Source(&hangingSource{Src: syn.Sub(), n: 5})
	if panicLine != nil {
		sub = syn.Sub()
	}
	tracks := []*soakrun.Track{
		{Agent: "board-b", Flow: "imu", Role: agentproto.Subscriber, Src: sub},
		{Agent: "board-a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	start := time.Now()
	runErr := r.Run(context.Background(), tracks)
	took := time.Since(start)
	lg := readLog(t, path)
	return lg, r, took, runErr
}

// newCheckpoint creates a soak checkpoint, soak.jsonl in a fresh test
// directory, closed when the test ends (Close is idempotent, so a test
// may close it earlier to read it back); it returns the checkpoint and its
// path.
func newCheckpoint(t *testing.T, h soak.Header) (*soak.Checkpointer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	cp, err := soak.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp, path
}

// readLog reads the soak log at path back (soak.Read), failing the test
// if it cannot.
func readLog(t *testing.T, path string) *soak.Log {
	t.Helper()
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

func faultWindows(lg *soak.Log) []soak.Window {
	var out []soak.Window
	for _, w := range lg.Windows {
		if w.Fault != nil {
			out = append(out, w)
		}
	}
	return out
}

// deliveredAfter sums what every stream delivered in the windows after
// window index: a recovered board's traffic resumed when it is > 0.
func deliveredAfter(lg *soak.Log, index int) int64 {
	var n int64
	for _, w := range lg.Windows {
		if w.Index <= index {
			continue
		}
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				n += s.Delivered
			}
		}
	}
	return n
}

// TestHungBoardIsRecoveredAsOneFaultWindow: with power control and
// budget, a board that misses its heartbeats is recovered within the
// heartbeat budget, the soak runs to its end, and the checkpoint holds
// exactly one fault window naming the board, the cause and the console
// tail, excluded from the verdicts.
func TestHungBoardIsRecoveredAsOneFaultWindow(t *testing.T) {
	rec := &recoverer{}
	lg, r, _, err := runRecovery(t, rec, 2, nil)
	if err != nil {
		t.Fatalf("Run: %v; want the soak to survive the recovered board", err)
	}
	if len(rec.calls) != 1 || rec.calls[0] != "board-b" {
		t.Fatalf("recoveries %v, want [board-b]", rec.calls)
	}
	fw := faultWindows(lg)
	if len(fw) != 1 {
		t.Fatalf("%d fault windows, want 1", len(fw))
	}
	f := fw[0].Fault
	if f.Board != "board-b" || !strings.Contains(f.Cause, "sent no agent window") || !strings.Contains(f.Console, "Kernel panic") {
		t.Errorf("fault %+v: want board-b, the heartbeat cause and the console tail", f)
	}
	// Hung after 5 drains of 50 ms: detected at most a heartbeat (400 ms)
	// plus two drains later.
	if lost := f.From.Sub(fw[0].Start); lost > 5*50*time.Millisecond+400*time.Millisecond+2*50*time.Millisecond+300*time.Millisecond {
		t.Errorf("detected %v into the window: want within the heartbeat budget", lost)
	}
	if got := r.Status().BoardRecoveries; got != 1 {
		t.Errorf("status board recoveries %d, want 1", got)
	}
	// Traffic resumed: a window after the fault window delivered.
	if deliveredAfter(lg, fw[0].Index) == 0 {
		t.Errorf("nothing delivered after the fault window: the flows did not resume")
	}
	one := 1
	if v := soak.Judge(lg, soak.Bounds{MaxFaultWindows: &one}); v.FaultWindows != 1 || v.Verdict == report.Fail {
		t.Errorf("Judge: %d fault windows, verdict %s", v.FaultWindows, v.Verdict)
	}
}

// TestRecoveryBudgetExhaustedFailsNamingBoard: a board that hangs again
// past the budget stops the soak promptly with a verdict naming it; the
// first outage stays one fault window.
func TestRecoveryBudgetExhaustedFailsNamingBoard(t *testing.T) {
	rec := &recoverer{hangAfter: 3}
	lg, _, took, err := runRecovery(t, rec, 1, nil)
	if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board board-b") || !strings.Contains(err.Error(), "recovery budget exhausted (1 of 1 used)") {
		t.Fatalf("Run: %v; want ErrBoardLost naming board-b and the exhausted budget", err)
	}
	if took > 2800*time.Millisecond {
		t.Errorf("the soak ran %v: want it stopped at the second loss, not at its end", took)
	}
	if n := len(faultWindows(lg)); n != 1 || len(rec.calls) != 1 {
		t.Errorf("%d fault windows, %d recoveries; want 1 and 1", n, len(rec.calls))
	}
}

// TestNoPowerControlFailsNamingBoard: a lost board without power control
// is not recovered; the verdict names the board and says why.
func TestNoPowerControlFailsNamingBoard(t *testing.T) {
	rec := &recoverer{noPower: errors.New("board board-b has no power block")}
	_, _, _, err := runRecovery(t, rec, 3, nil)
	if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "no power control (board board-b has no power block)") || len(rec.calls) != 0 {
		t.Fatalf("Run: %v, recoveries %v; want ErrBoardLost saying board-b has no power control", err, rec.calls)
	}
}

// TestConsolePanicIsRecovered: a panic on a board's console counts as a
// loss at once (its agent windows still arrive: the heartbeat alone
// would not notice a board that panicked after its last window).
func TestConsolePanicIsRecovered(t *testing.T) {
	rec := &recoverer{}
	start := time.Now()
	panicked := start.Add(700 * time.Millisecond)
	line := func(board string, since time.Time) string {
		if board == "board-b" && time.Now().After(panicked) && since.Before(panicked) {
			return "Kernel panic - not syncing: sysrq triggered crash"
		}
		return ""
	}
	lg, _, _, err := runRecovery(t, rec, 1, line)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	fw := faultWindows(lg)
	if len(fw) != 1 || !strings.Contains(fw[0].Fault.Cause, "console: Kernel panic") {
		t.Fatalf("fault windows %d (%+v), want 1 with the console cause", len(fw), fw)
	}
}

// TestPlanOnMiddleware: a peer's plan keeps the flows its route accepts,
// renamed and placed where the route says, notes the others, and fails
// when none is left; Shorten rescales window, churn and warm-up.
func TestPlanOnMiddleware(t *testing.T) {
	cfg, rack, prof := planInputs(t, shmUDPPlan)
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

// shmUDPPlan is a soak config with a 1 kHz shm flow and a 100 Hz UDP flow
// of 4 KiB (its traffic mix last, so a test can add a flow).
const shmUDPPlan = `
payload_sizes: [64]
rates_hz: [1000]
messages: 100
soak: {duration: 72h, short_duration: 30s, checkpoint: 10s}
traffic_mix:
  - {transport: shm, payload: 64, rate_hz: 1000}
  - {transport: udp, payload: 4KiB, rate_hz: 100}
`
