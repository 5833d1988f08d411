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

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
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

func TestEndpoint(t *testing.T) {
	m := live.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A real Prometheus scrapes the endpoint; its HTTP API must return the
// series with the values the cases hold.
func TestPrometheusScrapes(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (Debian package prometheus)")
	}
	m := live.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := testCase("udp 64", 3)
	m.ObserveCase(c)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: hilrig\n    static_configs: [{targets: [%q]}]\n", a.String())), 0o644)
	web := fmt.Sprintf("127.0.0.1:%d", freePort(t))
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
	} {
		out, err := exec.Command(pt, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
