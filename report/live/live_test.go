package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/report/live/promtest"
	"github.com/hilrig/hilrig/report/soak"
)

func testCase(name string, lost int64) *report.Case {
	h := report.NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		h.Record(10000 + i*10)
	}
	c := &report.Case{Suite: "latency", Name: name, Sent: 1000, Delivered: 1000 - lost, Lost: lost, Histogram: h,
		Bounds: &report.Bounds{MaxLost: report.Loss(0)}}
	c.Finalize()
	return c
}

func scrape(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// serveMetrics starts a new Metrics' endpoint on a free loopback port until ctx
// ends, failing t if it cannot listen.
func serveMetrics(ctx context.Context, t *testing.T) (*live.Metrics, net.Addr) {
	t.Helper()
	m := live.New()
	a, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, a
}

func TestEndpoint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, a := serveMetrics(ctx, t)
	m.ObserveCase(testCase("shm 64", 0))
	m.ObserveCase(testCase("udp 64", 3))
	m.SoakProgress(30*time.Minute, 2*time.Hour)
	m.Board("board-a", true, 120*time.Nanosecond, 1<<20, 50)
	body := scrape(t, a.String())
	for _, want := range []string{
		`hilrig_case_messages{case="udp 64",kind="lost",suite="latency"} 3`,
		`hilrig_case_pass{case="udp 64",suite="latency"} 0`,
		`hilrig_case_pass{case="shm 64",suite="latency"} 1`,
		"hilrig_run_pass 0",
		"hilrig_soak_progress_ratio 0.25",
		"hilrig_soak_eta_seconds 5400",
		`hilrig_board_ptp_locked{board="board-a"} 1`,
		`hilrig_board_cpu_ratio{board="board-a"} 0.5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	// Cardinality cap.
	for i := range live.MaxCases + 5 {
		m.ObserveCase(&report.Case{Suite: "s", Name: strconv.Itoa(i)})
	}
	if body := scrape(t, a.String()); !strings.Contains(body, "hilrig_live_dropped_cases_total 7") {
		t.Errorf("dropped count missing (2 cases were there before)")
	}
	cancel()
}

// A real Prometheus scrapes the endpoint; its HTTP API must return the
// series with the values the cases hold.
func TestPrometheusScrapes(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (Debian package prometheus)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, a := serveMetrics(ctx, t)
	c := testCase("udp 64", 3)
	m.ObserveCase(c)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: hilrig\n    static_configs: [{targets: [%q]}]\n", a.String())), 0o644)
	web := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	cmd := exec.CommandContext(ctx, prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web)
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + web + "/api/v1/query?query=" + q)
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) != 1 {
			return 0, false
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		lost, ok1 := query(`hilrig_case_messages{kind="lost"}`)
		p99, ok2 := query(`hilrig_case_latency_seconds{quantile="0.99"}`)
		if ok1 && ok2 {
			if lost != 3 || p99 != float64(c.Summary.P99)/1e9 {
				t.Fatalf("prometheus has lost=%v p99=%v, want 3 and %v", lost, p99, float64(c.Summary.P99)/1e9)
			}
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("series never appeared in prometheus\n%s", log)
		}
		time.Sleep(500 * time.Millisecond) // polling an external process, with a deadline
	}
}

// The example scrape config and alerting rules in docs/ are valid.
func TestDocsPromtool(t *testing.T) {
	pt, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	docs := filepath.Join("..", "..", "docs", "prometheus")
	for _, args := range [][]string{
		{"check", "config", filepath.Join(docs, "prometheus.yml")},
		{"check", "rules", filepath.Join(docs, "hilrig-rules.yml")},
		{"test", "rules", filepath.Join(docs, "hilrig-rules.test.yml")},
	} {
		out, err := exec.Command(pt, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// gauge reads one series' value from the registry's exposition (-1 when
// absent), so a test can tell a series that moved from one that is merely
// registered.
func gauge(t *testing.T, m *live.Metrics, series string) float64 {
	t.Helper()
	return promtest.Exposed(t, m.Handler(), series)
}

func soakWindow(i int, p50 int64, lost int64, locked bool, rss int64) *soak.Window {
	h := report.NewHistogram()
	for k := range int64(100) {
		h.Record(p50 + k)
	}
	return &soak.Window{Index: i, Agents: []soak.AgentWindow{{Agent: "board-b", RSSBytes: rss, CPUPercent: 25,
		PTP:     &soak.PTPSample{Locked: locked, OffsetNs: 300 + int64(i)},
		Streams: []soak.StreamWindow{{Stream: "imu", Sent: 100, Delivered: 100 - lost, Lost: lost, Summary: h.Summary()}}},
		{Agent: "controller", RSSBytes: 5 << 20}}}
}

// Every per-window series moves with the windows fed: latency, messages
// (per window and totals), PTP lock and offset, RSS and CPU, windows
// closed; a board without PTP gets no PTP series.
func TestSoakWindowsMoveSeries(t *testing.T) {
	m := live.New()
	m.SoakWindow(soakWindow(0, 20000, 0, true, 10<<20))
	const lat = `hilrig_flow_window_latency_seconds{board="board-b",flow="imu",quantile="0.5"}`
	const lostW = `hilrig_flow_window_messages{board="board-b",flow="imu",kind="lost"}`
	const lostT = `hilrig_flow_messages_total{board="board-b",flow="imu",kind="lost"}`
	const sentT = `hilrig_flow_messages_total{board="board-b",flow="imu",kind="sent"}`
	first := map[string]float64{}
	for _, s := range []string{lat, lostW, lostT, sentT, `hilrig_board_ptp_locked{board="board-b"}`,
		`hilrig_board_ptp_offset_seconds{board="board-b"}`, `hilrig_board_rss_bytes{board="board-b"}`,
		`hilrig_board_cpu_ratio{board="board-b"}`, "hilrig_soak_windows_total", `hilrig_board_rss_bytes{board="controller"}`} {
		first[s] = gauge(t, m, s)
		if first[s] < 0 {
			t.Errorf("%s absent after the first window", s)
		}
	}
	if v := gauge(t, m, `hilrig_board_ptp_locked{board="controller"}`); v != -1 {
		t.Errorf("controller reports no PTP yet has ptp_locked %v", v)
	}
	second := soakWindow(1, 40000, 3, false, 12<<20)
	m.SoakWindow(second)
	for _, c := range []struct {
		series string
		want   float64
	}{
		{lat, float64(second.Agents[0].Streams[0].Summary.P50) / 1e9}, {lostW, 3}, {lostT, 3}, {sentT, 200},
		{`hilrig_board_ptp_locked{board="board-b"}`, 0},
		{`hilrig_board_ptp_offset_seconds{board="board-b"}`, 301e-9},
		{`hilrig_board_rss_bytes{board="board-b"}`, 12 << 20},
		{`hilrig_board_cpu_ratio{board="board-b"}`, 0.25},
		{"hilrig_soak_windows_total", 2},
	} {
		if got := gauge(t, m, c.series); got != c.want {
			t.Errorf("%s = %v after the second window, want %v (first %v)", c.series, got, c.want, first[c.series])
		}
	}
}

// A suite flow's agent windows feed the per-flow series and the board's
// resources; a nil *Metrics (metrics_listen unset) ignores every update.
func TestFlowWindowAndNil(t *testing.T) {
	m := live.New()
	for i, p50 := range []int64{10000, 30000} {
		h := report.NewHistogram()
		h.Record(p50)
		m.FlowWindow("board-b", "udp 64", &live.FlowWindow{SpanNs: 1e9, Received: 50, Lost: 1,
			Latency: h, RSSBytes: int64(i+1) << 20, CPUNs: 2e8})
		if got := gauge(t, m, `hilrig_flow_window_latency_seconds{board="board-b",flow="udp 64",quantile="1"}`); got < float64(p50)/1e9 || got > float64(p50)*1.001/1e9 {
			t.Errorf("window %d: max %v, want ~%v", i, got, float64(p50)/1e9)
		}
	}
	for s, want := range map[string]float64{
		`hilrig_flow_messages_total{board="board-b",flow="udp 64",kind="delivered"}`: 100,
		`hilrig_flow_messages_total{board="board-b",flow="udp 64",kind="lost"}`:      2,
		`hilrig_board_rss_bytes{board="board-b"}`:                                    2 << 20,
		`hilrig_board_cpu_ratio{board="board-b"}`:                                    0.2,
	} {
		if got := gauge(t, m, s); got != want {
			t.Errorf("%s = %v, want %v", s, got, want)
		}
	}
	if v := gauge(t, m, `hilrig_flow_messages_total{board="board-b",flow="udp 64",kind="sent"}`); v != -1 {
		t.Errorf("a subscriber window exported sent = %v", v)
	}
	var none *live.Metrics
	none.FlowWindow("b", "f", &live.FlowWindow{})
	none.SoakWindow(soakWindow(0, 1, 0, true, 1))
	none.SoakProgress(time.Second, time.Minute)
	none.BoardPTP("b", true, time.Microsecond)
	none.ObserveCase(testCase("x", 0))
}

// The flow cap holds: past MaxFlows board/flow pairs windows are counted,
// not exported.
func TestFlowCap(t *testing.T) {
	m := live.New()
	for i := range live.MaxFlows + 3 {
		m.FlowWindow("b", strconv.Itoa(i), &live.FlowWindow{Received: 1})
	}
	if got := gauge(t, m, "hilrig_live_dropped_flows_total"); got != 3 {
		t.Fatalf("dropped flows %v, want 3", got)
	}
}

// The soak's verdict so far: passing, then failing with the bound that
// broke named, and the run's verdict failing with it even though every
// recorded case passed; a bound outside the closed vocabulary is not
// exported, and a later soak without a bound drops that bound's series.
func TestSoakVerdict(t *testing.T) {
	m := live.New()
	if got := gauge(t, m, "hilrig_soak_pass"); got != -1 {
		t.Fatalf("before any soak window: hilrig_soak_pass %v, want -1", got)
	}
	m.ObserveCase(testCase("udp 64", 0))
	pass := []soak.RunningCheck{{Bound: soak.BoundLost, Verdict: report.Pass}, {Bound: soak.BoundWindowMax, Verdict: report.Pass}}
	m.SoakVerdict(pass)
	for s, want := range map[string]float64{
		"hilrig_soak_pass": 1, "hilrig_run_pass": 1,
		`hilrig_soak_bound_failing{bound="lost"}`: 0, `hilrig_soak_bound_failing{bound="window_max"}`: 0,
	} {
		if got := gauge(t, m, s); got != want {
			t.Errorf("passing: %s = %v, want %v", s, got, want)
		}
	}
	m.SoakVerdict([]soak.RunningCheck{{Bound: soak.BoundLost, Verdict: report.Pass}, {Bound: soak.BoundWindowMax, Verdict: report.Fail},
		{Bound: "board1/imu", Verdict: report.Fail}})
	for s, want := range map[string]float64{
		"hilrig_soak_pass": 0, "hilrig_run_pass": 0,
		`hilrig_soak_bound_failing{bound="lost"}`: 0, `hilrig_soak_bound_failing{bound="window_max"}`: 1,
		`hilrig_soak_bound_failing{bound="board1/imu"}`: -1, // not a bound kind: absent
	} {
		if got := gauge(t, m, s); got != want {
			t.Errorf("failing: %s = %v, want %v", s, got, want)
		}
	}
	// A passing case recorded later does not hide the failing soak.
	m.ObserveCase(testCase("udp 128", 0))
	if got := gauge(t, m, "hilrig_run_pass"); got != 0 {
		t.Errorf("run verdict %v after a passing case, want 0 (the soak is failing)", got)
	}
	m.SoakVerdict(pass[:1])
	if got := gauge(t, m, `hilrig_soak_bound_failing{bound="window_max"}`); got != -1 {
		t.Errorf("a soak without a window max bound still exports it: %v", got)
	}
	var none *live.Metrics
	none.SoakVerdict(pass)
}

// A reaction case exports the program's CPU and RSS and its miss rate;
// a case without those figures gets no such series (not a false 0).
func TestReactionCaseFigures(t *testing.T) {
	m := live.New()
	h := report.NewHistogram()
	h.Record(120_000)
	c := report.NewCase(nil, report.CaseSpec{Suite: "reaction", Name: "imu reaction"},
		report.Results{Sent: 300, Delivered: 294, Lost: 6, Histogram: h, CPUPercent: 1.5, RSSBytes: 5 << 20})
	c.Add(report.Addition{By: "test", Extra: map[report.ExtraKey]float64{report.ExtraDUTMissRate: 0.02}})
	c.Finalize()
	m.ObserveCase(c)
	m.ObserveCase(testCase("shm 64", 0))
	for series, want := range map[string]float64{
		`hilrig_case_cpu_ratio{case="imu reaction",suite="reaction"}`:  0.015,
		`hilrig_case_rss_bytes{case="imu reaction",suite="reaction"}`:  5 << 20,
		`hilrig_case_miss_ratio{case="imu reaction",suite="reaction"}`: 0.02,
		`hilrig_case_cpu_ratio{case="shm 64",suite="latency"}`:         -1,
		`hilrig_case_rss_bytes{case="shm 64",suite="latency"}`:         -1,
		`hilrig_case_miss_ratio{case="shm 64",suite="latency"}`:        -1,
	} {
		if got := gauge(t, m, series); got != want {
			t.Errorf("%s = %g, want %g (-1: absent)", series, got, want)
		}
	}
}
