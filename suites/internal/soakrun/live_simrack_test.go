package soakrun_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// A real Prometheus scrapes the endpoint during a short soak on the sim
// rack (real agents, one shm flow, the soak suite's runner, feed and
// checkpoint): through its HTTP API the flow's series moved during the
// soak and agree with the run's result.json.
func TestPrometheusScrapesSimRackSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the sim rack's agents and a Prometheus")
	}
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	var link string
	for _, l := range rack.Links {
		if l.Transport == fixtures.Shm {
			link = l.Name
		}
	}
	if link == "" {
		t.Fatal("the sim rack has no shm link")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // may build hilrig
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{MaxWindows: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig close: %v", err)
		}
	})
	if _, err := r.Binary(ctx); err != nil {
		t.Fatal(err)
	}

	m := live.New()
	prom := serveScraped(ctx, t, m)
	if _, err := prom.WaitScalar(ctx, `up{job="hilrig"}`, 2*time.Minute, func(x float64) bool { return x == 1 }); err != nil {
		t.Fatalf("endpoint never scraped: %v\n%s", err, prom.Log())
	}

	const stream = "shm-64B-200Hz-0"
	plan := &soakrun.Plan{Profile: "live", Duration: 5 * time.Second, Window: 500 * time.Millisecond, AgentWindow: 250 * time.Millisecond,
		Flows: []soakrun.Flow{{Name: stream, Transport: fixtures.Shm, Link: link, Payload: 64, RateHz: 200}}}
	dir := t.TempDir()
	cp, err := soak.Create(filepath.Join(dir, "soak.jsonl"), soak.Header{Name: "live", Window: plan.Window, Planned: plan.Duration, Rack: rack.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	feed, tracks, err := soakrun.StartRig(ctx, r, plan, time.Now().Add(plan.Duration+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(plan.Duration)
	feed.Until = until
	run := &soakrun.Runner{Name: "live", Window: plan.Window, Until: until, Checkpoint: cp, Finisher: feed, Controller: "controller", Live: m}
	if err := run.Run(ctx, tracks); err != nil {
		t.Fatal(err)
	}
	lg, err := soak.Read(cp.Path())
	if err != nil {
		t.Fatal(err)
	}
	got := recordCases(t, dir, rack.Name, m, soakrun.Cases("soak", "live", lg, soak.Judge(lg, soak.Bounds{}), soak.Bounds{}))
	var sc *report.Case
	var board string
	for i := range got.Cases {
		for _, w := range lg.Windows {
			for _, a := range w.Agents {
				for _, s := range a.Streams {
					if s.Stream == stream && got.Cases[i].Name == "live "+soak.StreamKey(a.Agent, s.Stream) {
						sc, board = &got.Cases[i], a.Agent
					}
				}
			}
		}
	}
	if sc == nil || sc.Delivered == 0 {
		t.Fatalf("result.json has no delivering case of %s: %+v", stream, got.Cases)
	}
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer qcancel()
	if _, err := prom.WaitScalar(qctx, fmt.Sprintf(`hilrig_case_messages{case=%q,kind="delivered"}`, sc.Name), time.Minute,
		func(x float64) bool { return x == float64(sc.Delivered) }); err != nil {
		t.Fatalf("case series: %v", err)
	}
	flow := fmt.Sprintf(`{board=%q,flow=%q`, board, stream)
	for _, c := range []struct {
		expr string
		ok   func(float64) bool
		want string
	}{
		{`hilrig_flow_messages_total` + flow + `,kind="delivered"}`, func(x float64) bool { return x == float64(sc.Delivered) }, "result.json's delivered"},
		{`hilrig_flow_messages_total` + flow + `,kind="lost"}`, func(x float64) bool { return x == float64(sc.Lost) }, "result.json's lost"},
		{fmt.Sprintf(`hilrig_case_latency_seconds{case=%q,quantile="0.99"}`, sc.Name), func(x float64) bool { return x == float64(sc.Summary.P99)/1e9 }, "result.json's p99"},
		{"hilrig_soak_windows_total", func(x float64) bool { return x == float64(len(lg.Windows)) }, "the checkpoint's windows"},
		{`changes(hilrig_flow_messages_total` + flow + `,kind="delivered"}[5m])`, func(x float64) bool { return x >= 3 }, "≥ 3 changes during the soak"},
		{"changes(hilrig_soak_progress_ratio[5m])", func(x float64) bool { return x >= 3 }, "≥ 3 changes"},
		{fmt.Sprintf(`hilrig_board_rss_bytes{board=%q}`, board), func(x float64) bool { return x > 0 }, "the board's RSS"},
	} {
		x, err := prom.Scalar(qctx, c.expr)
		if err != nil || !c.ok(x) {
			t.Errorf("%s = %v (%v), want %s", c.expr, x, err, c.want)
		}
	}
}
