package steps

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/recording/mcap/mcapcli"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/timesync"
)

// lockedJudge says every window was locked to within 300 ns.
type lockedJudge struct{}

func (lockedJudge) Window(from, to time.Time, boards ...string) (timesync.WindowQuality, error) {
	return timesync.WindowQuality{From: from, To: to, Locked: true, Bound: 300 * time.Nanosecond}, nil
}

// TestRecordFlow: with `record: on`, a measured flow's case references
// its recording (runs/<id>/recordings/…, relative to the report
// directory), and the file holds one latency and one PTP message per
// subscriber window; with record off there is no recording and no note.
func TestRecordFlow(t *testing.T) {
	cfg, err := fixtures.ParseConfig("g.config", []byte("payload_sizes: [64]\nrates_hz: [100]\nmessages: 10\nrecord: on\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := &Env{TestContext: &harness.TestContext{Suite: "latency", Config: cfg, ReportDir: dir, RunDir: filepath.Join(dir, "runs", "r1"), RunID: "r1"}}
	h := report.NewHistogram()
	h.Record(42_000)
	var ws []agentproto.Window
	for i := range 3 {
		ws = append(ws, agentproto.Window{Endpoint: "sub", Index: uint64(i), StartNs: int64(i) * 1e9, EndNs: int64(i+1) * 1e9, Received: 1, Latency: h})
	}
	run := &Ran{Result: &rig.FlowResult{Subscribers: []*agentproto.Final{{Endpoint: "sub"}}, Windows: [][]agentproto.Window{ws}}, From: "a", To: "b"}
	a, ok := recordFlow(env, "shm 64B", run, &gateOutcome{boards: []string{"a", "b"}, judge: lockedJudge{}})
	if !ok || len(a.Notes) != 1 || !strings.HasPrefix(a.Notes[0], "recording: runs/r1/recordings/latency_shm_64B.mcap (MCAP, 6 messages") {
		t.Fatalf("addition %+v, want the recording's reference", a)
	}
	var out bytes.Buffer
	if err := mcapcli.Run(context.Background(), []string{"info", filepath.Join(dir, "runs", "r1", "recordings", "latency_shm_64B.mcap")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/hilrig/ptp") || !strings.Contains(out.String(), "/hilrig/latency") {
		t.Fatalf("info:\n%s", out.String())
	}

	cfg.Record = fixtures.SwitchOff
	env.RunDir = filepath.Join(dir, "runs", "r2")
	if a, ok := recordFlow(env, "shm 64B", run, nil); ok || len(a.Notes) != 0 {
		t.Fatalf("record off: %+v", a)
	}
	if _, err := os.Stat(env.RunDir); !os.IsNotExist(err) {
		t.Fatalf("record off wrote %s (%v)", env.RunDir, err)
	}
}
