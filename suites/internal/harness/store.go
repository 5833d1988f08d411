package harness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/open"
)

// StoreTimeout bounds each results-store step of a suite (open, begin,
// put): a store that is down or locked costs the run at most this, never
// its results (result.json is written first).
const StoreTimeout = 30 * time.Second

// storeVersion names the build in the store's schema table.
const storeVersion = "hilrig harness"

// resultsDSN is the configured store (empty: report_dir/results.db).
func (tc *TestContext) resultsDSN() string {
	if tc.Config == nil {
		return ""
	}
	return tc.Config.ResultsDSN()
}

// withStore opens the run's results store, calls f and closes it. With
// `results: off` it does nothing. Errors name the store (the store's own
// errors all do).
func (tc *TestContext) withStore(f func(context.Context, store.Store) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), StoreTimeout)
	defer cancel()
	if err := os.MkdirAll(tc.ReportDir, 0o755); err != nil { // where the default SQLite file goes
		return err
	}
	s, err := open.Open(ctx, tc.resultsDSN(), tc.ReportDir, storeVersion)
	if err != nil {
		return err
	}
	if s == nil {
		return nil
	}
	defer s.Close()
	return f(ctx, s)
}

// BeginStore marks this suite's part of the run as begun in the results
// store, so a run killed before WriteReport shows as incomplete there.
// A store error is printed to w (the run goes on; result.json is the
// record).
func (tc *TestContext) BeginStore(w io.Writer) {
	ri := report.RunInfo{ID: tc.RunID, Rack: tc.rackLabel(), Start: tc.Started, End: tc.Started}
	err := tc.withStore(func(ctx context.Context, s store.Store) error { return s.Begin(ctx, ri, tc.Suite) })
	if err != nil {
		fmt.Fprintf(w, "hilrig: %v (the run is still written to result.json)\n", err)
	}
}

// putStore writes the suite's result (and the soak windows of lg) as this
// suite's part of the run. The error names the store and says how to load
// the run later.
func (tc *TestContext) putStore(res *report.Result, lg *soak.Log, resultFile string) error {
	err := tc.withStore(func(ctx context.Context, s store.Store) error {
		if err := s.Put(ctx, res, tc.Suite); err != nil {
			return err
		}
		if lg != nil && len(lg.Windows) > 0 {
			return s.PutSoak(ctx, store.KeyOf(res.Run), lg)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w; the run is in %s — load it later with: hilrig report import %s", err, resultFile, resultFile)
	}
	return nil
}

// metrics is the live endpoint's registry of this suite process (nil
// when metrics_listen is not set).
var metrics *live.Metrics

// serveMetrics starts the Prometheus endpoint on metrics_listen for the
// life of the suite process (it ends with the process). A listen error is
// printed; the run goes on without it.
func (tc *TestContext) serveMetrics(w io.Writer) {
	if tc.Config == nil || tc.Config.MetricsListen == "" {
		return
	}
	// Warnings (a bind beyond loopback) go where the address is printed.
	lg := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	addr, err := ServeMetrics(context.Background(), tc.Config.MetricsListen, lg)
	if err != nil {
		fmt.Fprintf(w, "hilrig: %v (no live metrics this run)\n", err)
		return
	}
	fmt.Fprintf(w, "hilrig metrics: http://%s/metrics\n", addr)
}

// ServeMetrics makes a fresh live endpoint this process's [Live] and
// serves it on listen (host:port) until ctx ends; it returns the bound
// address. The suites start it from metrics_listen before any spec runs
// (Live is then read, never written, while specs run); tests of the
// feeding start it on 127.0.0.1:0. lg gets the endpoint's warnings (nil:
// none).
func ServeMetrics(ctx context.Context, listen string, lg *slog.Logger) (net.Addr, error) {
	m := live.New()
	addr, err := m.Serve(ctx, listen, &live.ServeOptions{Logger: lg})
	if err != nil {
		return nil, err
	}
	metrics = m
	return addr, nil
}

// Live is this suite process's live metrics endpoint, for the steps and
// the soak runner to feed while they run. It is nil when metrics_listen
// is not set; a nil *live.Metrics ignores updates, so callers feed it
// unconditionally.
func Live() *live.Metrics { return metrics }
