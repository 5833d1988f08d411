package soakrun_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/report/live/promtest"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

var _ soakrun.LiveSink = (*live.Metrics)(nil)

// lockedPTP reports board "b" locked with a fixed offset (board "a" has
// no PTP), as timesync would on a rack whose boards run ptp4l.
type lockedPTP struct{}

func (lockedPTP) Sample(agent string, _, _ time.Time) *soak.PTPSample {
	if agent != "b" {
		return nil
	}
	return &soak.PTPSample{Locked: true, State: "SLAVE", OffsetNs: 420, MaxAbsOffsetNs: 800}
}

// value reads one series from m's exposition (-1 when absent).
func value(t *testing.T, m *live.Metrics, series string) float64 {
	t.Helper()
	return promtest.Exposed(t, m.Handler(), series)
}

// The runner feeds the live endpoint while the soak runs: after every
// window each per-window series holds that window's values, and progress,
// windows and message totals move forward window by window.
func TestRunnerFeedsLiveMetrics(t *testing.T) {
	cp, _ := newCheckpoint(t, soak.Header{Name: "live", Window: 50 * time.Millisecond})
	m := live.New()
	syn := soakrun.NewSynth(2000, 30e3, 3)
	var progress, delivered []float64
	var delSum int64
	r := &soakrun.Runner{Name: "live", Window: 50 * time.Millisecond, Until: time.Now().Add(500 * time.Millisecond),
		Checkpoint: cp, PTP: lockedPTP{}, Controller: "controller", Live: m}
	r.OnWindow = func(w *soak.Window) {
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				delSum += s.Delivered
				p99 := value(t, m, fmt.Sprintf(`hilrig_flow_window_latency_seconds{board=%q,flow=%q,quantile="0.99"}`, a.Agent, s.Stream))
				if s.Summary.Count > 0 && p99 != float64(s.Summary.P99)/1e9 {
					t.Errorf("window %d: live p99 %v, window's %v", w.Index, p99, float64(s.Summary.P99)/1e9)
				}
			}
		}
		if got := value(t, m, "hilrig_soak_windows_total"); got != float64(w.Index+1) {
			t.Errorf("window %d: windows_total %v", w.Index, got)
		}
		progress = append(progress, value(t, m, "hilrig_soak_progress_ratio"))
		delivered = append(delivered, value(t, m, `hilrig_flow_messages_total{board="b",flow="imu",kind="delivered"}`))
		if got := value(t, m, `hilrig_flow_messages_total{board="b",flow="imu",kind="delivered"}`); got != float64(delSum) {
			t.Errorf("window %d: delivered total %v, checkpoint so far %d", w.Index, got, delSum)
		}
	}
	tracks := []*soakrun.Track{
		{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()},
		{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}
	if err := r.Run(context.Background(), tracks); err != nil {
		t.Fatal(err)
	}
	if len(progress) < 5 {
		t.Fatalf("%d windows, want ≥ 5 of 50 ms in 500 ms", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] || delivered[i] <= delivered[i-1] {
			t.Errorf("window %d: progress %v→%v, delivered %v→%v: did not move", i, progress[i-1], progress[i], delivered[i-1], delivered[i])
		}
	}
	if got := value(t, m, "hilrig_soak_progress_ratio"); got != 1 {
		t.Errorf("progress at the end %v, want 1", got)
	}
	for s, want := range map[string]float64{
		`hilrig_board_ptp_locked{board="b"}`:         1,
		`hilrig_board_ptp_offset_seconds{board="b"}`: 420e-9,
		`hilrig_board_ptp_locked{board="a"}`:         -1, // no PTP: no series, not "unlocked"
	} {
		if got := value(t, m, s); got != want {
			t.Errorf("%s = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{`hilrig_board_rss_bytes{board="b"}`, `hilrig_board_rss_bytes{board="controller"}`, `hilrig_board_cpu_ratio{board="controller"}`} {
		if value(t, m, s) < 0 {
			t.Errorf("%s absent", s)
		}
	}
}

// A real Prometheus scrapes the endpoint during a short soak (synthetic
// feed through the real runner, checkpoint and verdicts); its HTTP API
// then holds series that moved during the run and agree with the run's
// result.json.
func TestPrometheusScrapesSoak(t *testing.T) {
	m := live.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prom := serveScraped(ctx, t, m)
	// Prometheus hands new targets to its scrapers after a few seconds:
	// start the soak once the endpoint was scraped, so every window is.
	if _, err := prom.WaitScalar(ctx, `up{job="hilrig"}`, 2*time.Minute, func(x float64) bool { return x == 1 }); err != nil {
		t.Fatalf("endpoint never scraped: %v\n%s", err, prom.Log())
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "soak.jsonl")
	const window, span = 400 * time.Millisecond, 4 * time.Second
	cp, err := soak.Create(path, soak.Header{Name: "prom", Window: window, Planned: span})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	syn := soakrun.NewSynth(1000, 30e3, 5)
	r := &soakrun.Runner{Name: "prom", Window: window, Until: time.Now().Add(span), Checkpoint: cp, PTP: lockedPTP{},
		Controller: "controller", Live: m}
	if err := r.Run(ctx, []*soakrun.Track{
		{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()},
		{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	}); err != nil {
		t.Fatal(err)
	}
	lg := readLog(t, path)
	v := soak.Judge(lg, soak.Bounds{})
	got := recordCases(t, dir, "sim", m, soakrun.Cases("soak", "prom", lg, v, soak.Bounds{}))
	var stream *report.Case
	for i := range got.Cases {
		if got.Cases[i].Delivered > 0 && !strings.HasSuffix(got.Cases[i].Name, "verdicts") {
			stream = &got.Cases[i]
		}
	}
	if stream == nil {
		t.Fatalf("result.json has no stream case: %+v", got.Cases)
	}

	// Wait for a scrape after the last window and the cases.
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer qcancel()
	if _, err := prom.WaitScalar(qctx, "hilrig_soak_windows_total", time.Minute, func(x float64) bool { return x == float64(len(lg.Windows)) }); err != nil {
		t.Fatalf("%v\n%s", err, prom.Log())
	}
	if _, err := prom.WaitScalar(qctx, fmt.Sprintf(`hilrig_case_messages{case=%q,kind="delivered"}`, stream.Name), time.Minute,
		func(x float64) bool { return x == float64(stream.Delivered) }); err != nil {
		t.Fatalf("case series: %v", err)
	}
	check := func(expr string, ok func(float64) bool, want string) {
		t.Helper()
		x, err := prom.Scalar(qctx, expr)
		if err != nil || !ok(x) {
			t.Errorf("%s = %v (%v), want %s", expr, x, err, want)
		}
	}
	eq := func(w float64) func(float64) bool { return func(x float64) bool { return x == w } }
	check(`hilrig_flow_messages_total{board="b",flow="imu",kind="delivered"}`, eq(float64(stream.Delivered)), "result.json's delivered")
	check(`hilrig_flow_messages_total{board="b",flow="imu",kind="lost"}`, eq(float64(stream.Lost)), "result.json's lost")
	check(fmt.Sprintf(`hilrig_case_latency_seconds{case=%q,quantile="0.99"}`, stream.Name), eq(float64(stream.Summary.P99)/1e9), "result.json's p99")
	check(fmt.Sprintf(`hilrig_case_pass{case=%q}`, stream.Name), eq(verdictValue(stream.Verdict)), "result.json's verdict")
	check(`hilrig_board_ptp_locked{board="b"}`, eq(1), "locked")
	check(`hilrig_board_ptp_offset_seconds{board="b"}`, eq(420e-9), "the sampled offset")
	check("hilrig_soak_progress_ratio", eq(1), "1 at the end")
	// Moved during the run, as scraped: several distinct window counts and
	// progress values, and a latency series per window.
	check("changes(hilrig_soak_windows_total[5m])", func(x float64) bool { return x >= 3 }, "≥ 3 changes")
	check("changes(hilrig_soak_progress_ratio[5m])", func(x float64) bool { return x >= 3 }, "≥ 3 changes")
	check(`changes(hilrig_flow_window_latency_seconds{board="b",flow="imu",quantile="0.99"}[5m])`, func(x float64) bool { return x >= 1 }, "≥ 1 change")
	check(`max_over_time(hilrig_soak_eta_seconds[5m])`, func(x float64) bool { return x > 1 }, "an ETA seconds ahead while running")
	check(`hilrig_board_rss_bytes{board="controller"}`, func(x float64) bool { return x > 1<<20 }, "the controller's RSS")
}

func verdictValue(v report.Verdict) float64 {
	switch v {
	case report.Pass:
		return 1
	case report.Fail:
		return 0
	}
	return -1
}

// The runner publishes the soak's verdict so far at every closed window:
// a soak whose first window breaks its window max bound (synthetic
// latencies around 30 µs against a 10 µs bound) shows failing, naming
// that bound, from that window on — while it still runs — and a soak
// within its bounds shows passing at every window. The final soak.Judge
// over the checkpoint agrees.
func TestRunnerPublishesVerdictSoFar(t *testing.T) {
	zero := int64(0)
	for _, tc := range []struct {
		name    string
		max     time.Duration
		want    float64 // hilrig_soak_pass at every window
		verdict report.Verdict
	}{
		{"breaks window max", 10 * time.Microsecond, 0, report.Fail},
		{"within bounds", time.Second, 1, report.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const window = 50 * time.Millisecond
			cp, path := newCheckpoint(t, soak.Header{Name: "verdict", Window: window})
			m := live.New()
			b := soak.Bounds{MaxLost: &zero, MaxLatency: tc.max}
			syn := soakrun.NewSynth(2000, 30e3, 7)
			r := &soakrun.Runner{Name: "verdict", Window: window, Until: time.Now().Add(500 * time.Millisecond), Checkpoint: cp,
				PTP: lockedPTP{}, Live: m, Bounds: b}
			runningWindows := 0
			r.OnWindow = func(w *soak.Window) {
				running := w.End.Before(r.Until)
				if running {
					runningWindows++
				}
				failing := 1 - tc.want
				for s, want := range map[string]float64{
					"hilrig_soak_pass": tc.want, "hilrig_run_pass": tc.want,
					`hilrig_soak_bound_failing{bound="window_max"}`: failing,
					`hilrig_soak_bound_failing{bound="lost"}`:       0,
				} {
					if got := value(t, m, s); got != want {
						t.Errorf("window %d (soak running: %v): %s = %v, want %v", w.Index, running, s, got, want)
					}
				}
			}
			if err := r.Run(context.Background(), []*soakrun.Track{
				{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()},
				{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
			}); err != nil {
				t.Fatal(err)
			}
			// The verdict showed before the end: windows closed before
			// Until carried it (window 0 among them).
			if runningWindows < 3 {
				t.Fatalf("%d windows of %v closed before the soak's end: the verdict was not seen while running", runningWindows, window)
			}
			lg := readLog(t, path)
			if v := soak.Judge(lg, b); v.Verdict != tc.verdict {
				t.Errorf("final verdict %s (failed %v), live showed %v", v.Verdict, soakrun.FailedChecks(v), tc.want)
			}
		})
	}
}

// recordCases finalizes the cases, observes each on m and writes them to
// dir/result.json as harness.Record does, and returns the file read back.
func recordCases(t *testing.T, dir, rack string, m *live.Metrics, cases []report.Case) *report.Result {
	t.Helper()
	res := report.NewResult(report.RunInfo{Rack: rack})
	for _, c := range cases {
		c.Finalize()
		m.ObserveCase(&c)
		res.Cases = append(res.Cases, c)
	}
	rj := filepath.Join(dir, "result.json")
	if err := res.WriteFile(rj); err != nil {
		t.Fatal(err)
	}
	got, err := report.ReadFile(rj)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// serveScraped serves m's endpoint on a loopback port until ctx ends and
// starts a real Prometheus scraping it.
func serveScraped(ctx context.Context, t *testing.T, m *live.Metrics) *promtest.Server {
	t.Helper()
	addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	return promtest.Start(t, addr.String())
}
