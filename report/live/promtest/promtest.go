// Package promtest runs a real Prometheus server (Debian package
// prometheus) for tests: it scrapes the given targets every 500 ms,
// keeps its TSDB in a temporary directory, listens on a free loopback
// port, and is stopped by its PID and removed when the test ends.
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
)

// ScrapeInterval is how often the server scrapes its targets: short, so a
// few-second soak yields several scrapes.
const ScrapeInterval = 500 * time.Millisecond

// Server is a running Prometheus.
type Server struct {
	// Addr is the server's host:port (its HTTP API).
	Addr string
	dir  string
	cmd  *exec.Cmd
}

// Sample is one series of an instant query's result.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Start starts Prometheus scraping targets (host:port, /metrics) or
// skips tb when prometheus is not installed (.ci/test installs it).
func Start(tb testing.TB, targets ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		tb.Skip("prometheus not installed (Debian package prometheus)")
	}
	dir := tb.TempDir()
	var ts []string
	for _, t := range targets {
		ts = append(ts, strconv.Quote(t))
	}
	cfg := fmt.Sprintf("global: {scrape_interval: %s, scrape_timeout: %s}\nscrape_configs:\n  - job_name: hilrig\n    static_configs: [{targets: [%s]}]\n",
		ScrapeInterval, ScrapeInterval, strings.Join(ts, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(testkit.FreePort(tb)), dir: dir}
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+s.Addr)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.stop()
		logf.Close()
	})
	// Ready when its readiness endpoint answers 200 (TSDB open, config
	// loaded), polled against a deadline.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + s.Addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("prometheus not ready at %s within 2 min\n%s", s.Addr, s.Log())
		}
		time.Sleep(100 * time.Millisecond) // polling an external process against a deadline
	}
}

// stop ends the server by its PID (SIGTERM, then SIGKILL after 30 s).
func (s *Server) stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// Log is the server's output so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return string(b)
}

// Query runs an instant PromQL query through the HTTP API.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, r.Error)
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, x := range r.Data.Result {
		v, _ := x.Value[1].(string)
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %q: %w", expr, v, err)
		}
		out = append(out, Sample{Metric: x.Metric, Value: f})
	}
	return out, nil
}

// Scalar runs expr, which must return exactly one series, and returns
// its value.
func (s *Server) Scalar(ctx context.Context, expr string) (float64, error) {
	r, err := s.Query(ctx, expr)
	if err != nil {
		return 0, err
	}
	if len(r) != 1 {
		return 0, fmt.Errorf("query %s: %d series, want 1", expr, len(r))
	}
	return r[0].Value, nil
}

// WaitScalar polls expr until ok(value) or the deadline, and returns the
// last value and whether ok held.
func (s *Server) WaitScalar(ctx context.Context, expr string, timeout time.Duration, ok func(float64) bool) (float64, error) {
	deadline := time.Now().Add(timeout)
	var last float64
	var lastErr error
	for {
		v, err := s.Scalar(ctx, expr)
		if err == nil && ok(v) {
			return v, nil
		}
		last, lastErr = v, err
		if time.Now().After(deadline) {
			if lastErr != nil {
				return last, fmt.Errorf("after %v: %w", timeout, lastErr)
			}
			return last, fmt.Errorf("after %v: %s = %v, condition not met", timeout, expr, last)
		}
		time.Sleep(ScrapeInterval / 2) // polling an external process against a deadline
	}
}

// Exposed reads one series' value from h's exposition (served in
// process, no scrape): -1 when absent, so a test can tell a series that
// moved from one that is merely registered. series is the name with its
// labels as exposed ("name{label=\"x\"}").
func Exposed(t testing.TB, h http.Handler, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return -1
}
