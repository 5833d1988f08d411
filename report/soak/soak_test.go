package soak_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

func TestTheilSenKnownData(t *testing.T) {
	// y = 3 + 2x with 20 % gross outliers: least squares would be pulled far
	// off, Theil–Sen recovers the line exactly.
	var x, y []float64
	for i := 0; i < 50; i++ {
		x = append(x, float64(i))
		v := 3 + 2*float64(i)
		if i%5 == 0 {
			v += 1000
		}
		y = append(y, v)
	}
	slope, icpt, err := soak.TheilSen(x, y)
	if err != nil || math.Abs(slope-2) > 1e-9 || math.Abs(icpt-3) > 1e-9 {
		t.Errorf("TheilSen = %v, %v, %v; want 2, 3", slope, icpt, err)
	}
	// Long series go through binning; a clean line stays exact-ish.
	x, y = x[:0], y[:0]
	for i := 0; i < 26000; i++ {
		x = append(x, float64(i)/360)
		y = append(y, 100-0.5*float64(i)/360)
	}
	slope, _, err = soak.TheilSen(x, y)
	if err != nil || math.Abs(slope+0.5) > 1e-6 {
		t.Errorf("binned TheilSen slope = %v, %v; want -0.5", slope, err)
	}
	if _, _, err := soak.TheilSen([]float64{1, 2}, []float64{1, 2}); !errors.Is(err, soak.ErrTooFewPoints) {
		t.Errorf("2 points: %v", err)
	}
	if _, _, err := soak.TheilSen([]float64{1, 1, 1}, []float64{1, 2, 3}); !errors.Is(err, soak.ErrTooFewPoints) {
		t.Errorf("equal x: %v", err)
	}
}

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// window makes window i of a synthetic soak: RSS grows by rssPerWin bytes,
// p99 by driftNs per window.
func window(i int, rssPerWin, driftNs int64, locked bool) *soak.Window {
	h := report.NewHistogram()
	for k := int64(0); k < 1000; k++ {
		h.Record(20_000 + k*10 + int64(i)*driftNs)
	}
	start := t0.Add(time.Duration(i) * 10 * time.Second)
	return &soak.Window{Start: start, End: start.Add(10 * time.Second), Agents: []soak.AgentWindow{{
		Agent: "board1", RSSBytes: 50<<20 + int64(i)*rssPerWin, CPUPercent: 3,
		PTP:     &soak.PTPSample{Locked: locked, State: "SLAVE", OffsetNs: int64(i % 7)},
		Streams: []soak.StreamWindow{{Stream: "imu", Sent: 10000, Delivered: 10000, Histogram: h}},
	}}}
}

func TestCheckpointAppendReadTornResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	cp, err := soak.Create(path, soak.Header{Name: "smoke", Started: t0, Window: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := soak.Create(path, soak.Header{}); !errors.Is(err, soak.ErrExists) {
		t.Errorf("second Create: %v, want ErrExists", err)
	}
	for i := 0; i < 5; i++ {
		if err := cp.Append(window(i, 0, 0, true)); err != nil {
			t.Fatal(err)
		}
	}
	cp.Close()
	if err := cp.Append(window(5, 0, 0, true)); !errors.Is(err, soak.ErrClosed) {
		t.Errorf("append after close: %v", err)
	}

	// A killed writer leaves half a line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"kind":"window","window":{"index":5,"start":"2026-03-01T00:00:50Z","agents":[{"agent":"boa`)
	f.Close()

	lg, err := soak.Read(path)
	if err != nil {
		t.Fatalf("torn tail must not be fatal: %v", err)
	}
	if len(lg.Windows) != 5 || len(lg.Notes) != 1 || !strings.Contains(lg.Notes[0], "torn tail from line 7") {
		t.Fatalf("windows=%d notes=%q", len(lg.Windows), lg.Notes)
	}
	if lg.Windows[0].Agents[0].Streams[0].Histogram != nil {
		t.Error("Read kept a window histogram in memory")
	}
	if tot := lg.Totals["board1/imu"]; tot == nil || tot.Count() != 5000 {
		t.Errorf("totals: %v", tot)
	}

	// Resume continues numbering, drops the torn tail, records the gap.
	resumeAt := t0.Add(5 * time.Minute)
	cp, before, err := soak.Resume(path, resumeAt)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Windows) != 5 || cp.NextIndex() != 5 {
		t.Fatalf("resume saw %d windows, next %d", len(before.Windows), cp.NextIndex())
	}
	w := window(30, 0, 0, true)
	if err := cp.Append(w); err != nil || w.Index != 5 {
		t.Fatalf("append after resume: index %d, %v", w.Index, err)
	}
	cp.Close()
	lg, err = soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Notes) != 0 {
		t.Errorf("notes after resume: %q", lg.Notes)
	}
	if len(lg.Windows) != 6 || lg.Windows[5].Index != 5 || len(lg.Resumes) != 1 {
		t.Fatalf("after resume: %d windows, %d resumes", len(lg.Windows), len(lg.Resumes))
	}
	r := lg.Resumes[0]
	if r.AfterIndex != 4 || !r.GapFrom.Equal(t0.Add(50*time.Second)) || !r.GapTo.Equal(resumeAt) || r.DroppedTailBytes == 0 {
		t.Errorf("resume record %+v", r)
	}
	if len(lg.Gaps) != 1 || lg.Gaps[0].Reason != "resumed" {
		t.Errorf("gaps %+v", lg.Gaps)
	}
}

func TestReadRejectsCorruptMiddleAndNewerSchema(t *testing.T) {
	dir := t.TempDir()
	mid := filepath.Join(dir, "mid.jsonl")
	os.WriteFile(mid, []byte(`{"kind":"header","header":{"schema_version":1}}
{"kind":"window","window":{"index":0}}
garbage here
{"kind":"window","window":{"index":1}}
`), 0o644)
	_, err := soak.Read(mid)
	if !errors.Is(err, soak.ErrBadCheckpoint) || !strings.Contains(err.Error(), "mid.jsonl line 3") {
		t.Errorf("corrupt middle: %v", err)
	}
	newer := filepath.Join(dir, "newer.jsonl")
	os.WriteFile(newer, []byte(`{"kind":"header","header":{"schema_version":7}}`+"\n"), 0o644)
	if _, err := soak.Read(newer); !errors.Is(err, soak.ErrSchemaVersion) || !strings.Contains(err.Error(), "newer.jsonl has schema_version 7") {
		t.Errorf("newer schema: %v", err)
	}
	nohdr := filepath.Join(dir, "nohdr.jsonl")
	os.WriteFile(nohdr, []byte(`{"kind":"window","window":{"index":0}}`+"\n"), 0o644)
	if _, err := soak.Read(nohdr); !errors.Is(err, soak.ErrBadCheckpoint) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("no header: %v", err)
	}
	// Power cut: NUL bytes at the end are a torn tail, not an error.
	nul := filepath.Join(dir, "nul.jsonl")
	os.WriteFile(nul, []byte(`{"kind":"header","header":{"schema_version":1}}`+"\n"+strings.Repeat("\x00", 300)+"\n\x00\x00"), 0o644)
	if lg, err := soak.Read(nul); err != nil || len(lg.Notes) != 1 {
		t.Errorf("NUL tail: %v", err)
	}
}

func TestJudge(t *testing.T) {
	loss := func(n int64) *int64 { return &n }
	one := 1
	b := soak.Bounds{WarmUp: time.Minute, MaxLost: loss(0), MaxRSSSlopeKiBPerHour: 100, MaxP99DriftPctPerDay: 50,
		MaxP50DriftPctPerDay: 50, MaxLatency: 200 * time.Microsecond, MaxUnlockedWindows: &one, MaxRestartRecovery: time.Second}
	build := func(rssPerWin, driftNs int64, unlocked int, lost int64, recovery time.Duration) *soak.Log {
		return writeLog(t, 360, func(i int) *soak.Window { // one hour
			w := window(i, rssPerWin, driftNs, i >= unlocked)
			if i == 100 {
				w.Agents[0].Streams[0].Lost = lost
				w.Agents[0].Events = []soak.Event{{Kind: soak.EventRestart, Target: "sub imu", Recovered: true, RecoveryNs: int64(recovery)}}
			}
			return w
		})
	}
	failed := func(v soak.Verdicts) []string {
		var out []string
		for _, c := range v.Checks {
			if c.Verdict == report.Fail {
				out = append(out, c.Bound)
			}
		}
		return out
	}
	good := soak.Judge(build(0, 0, 1, 0, 100*time.Millisecond), b)
	if good.Verdict != report.Pass || good.UnlockedWindows != 1 {
		t.Errorf("clean soak: %s, failed %v, unlocked %d", good.Verdict, failed(good), good.UnlockedWindows)
	}
	// 10 KiB per 10 s window = 3600 KiB/h, p99 +500 ns per window, 2 unlocked,
	// 3 lost, slow restart: every verdict must fire.
	bad := soak.Judge(build(10<<10, 500, 2, 3, 2*time.Second), b)
	want := []string{"lost board1/imu", "trend board1 RSS", "trend board1/imu p99", "window max", "PTP-unlocked windows", "restart recovery board1 sub imu"}
	got := strings.Join(failed(bad), "|")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("bad soak: %q not failed (failed: %s)", w, got)
		}
	}
	for _, tr := range bad.Trends {
		if tr.Subject == "board1 RSS" && math.Abs(tr.Slope-3600) > 1 {
			t.Errorf("RSS slope %v KiB/h, want 3600", tr.Slope)
		}
	}
	if bad.Verdict != report.Fail {
		t.Errorf("bad soak verdict %s", bad.Verdict)
	}
}

// TestJudgeFaultWindows: a window holding a recovered board outage has
// its losses and its latency left out of the verdicts, is counted, and
// is bounded by MaxFaultWindows; the fault (board, cause, console) is
// kept for the report.
func TestJudgeFaultWindows(t *testing.T) {
	zero := int64(0)
	one := 1
	b := soak.Bounds{MaxLost: &zero, MaxLatency: 200 * time.Microsecond, MaxFaultWindows: &one}
	build := func(faults ...int) *soak.Log {
		return writeLog(t, 20, func(i int) *soak.Window {
			w := window(i, 0, 0, true)
			if slices.Contains(faults, i) {
				// The outage: thousands lost, a 5 s latency.
				w.Agents[0].Streams[0].Lost = 5000
				w.Agents[0].Streams[0].Histogram.Record(int64(5 * time.Second))
				w.Fault = &soak.Fault{Board: "board1", Cause: "sent no agent window for 2s", From: w.Start, To: w.End,
					Recovery: "power-cycled", Console: "[panic] Kernel panic - not syncing"}
			}
			return w
		})
	}
	v := soak.Judge(build(7), b)
	if v.Verdict != report.Pass || v.FaultWindows != 1 || len(v.Faults) != 1 || v.Faults[0].Console == "" {
		t.Errorf("one fault window: verdict %s, fault windows %d, faults %+v; want pass, 1, with the console", v.Verdict, v.FaultWindows, v.Faults)
	}
	lg := build(7)
	if tot := lg.Totals[soak.StreamKey("board1", "imu")].Summary(); tot.Max >= int64(time.Second) {
		t.Errorf("the fault window's 5 s sample is in the soak's totals (max %d ns)", tot.Max)
	}
	v = soak.Judge(build(3, 9), b)
	var ck *report.Check
	for i := range v.Checks {
		if strings.HasPrefix(v.Checks[i].Bound, "fault windows") {
			ck = &v.Checks[i]
		}
	}
	if v.Verdict != report.Fail || ck == nil || ck.Verdict != report.Fail || !strings.Contains(ck.Note, "board1: sent no agent window") {
		t.Errorf("two fault windows, bound 1: verdict %s, check %+v; want the fault-window check to fail naming the board", v.Verdict, ck)
	}
}

func FuzzReadFrom(f *testing.F) {
	f.Add([]byte(`{"kind":"header","header":{"schema_version":1}}` + "\n" + `{"kind":"window","window":{"index":0,"agents":[{"agent":"a","streams":[{"stream":"s","sent":1}]}]}}` + "\n"))
	f.Add([]byte(`{"kind":"header","header":{"schema_version":1}}` + "\n" + `{"kind":"resume","resume":{"after_index":3}}` + "\n{\"ki"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lg, err := soak.ReadFrom(strings.NewReader(string(b)), "fuzz")
		if err != nil {
			return
		}
		_ = soak.Judge(lg, soak.Bounds{MaxRSSSlopeKiBPerHour: 1, MaxP99DriftPctPerDay: 1})
	})
}

// writeLog writes windows win(0..n-1) to a checkpoint started at t0 and
// reads the log back.
func writeLog(t *testing.T, n int, win func(i int) *soak.Window) *soak.Log {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	cp, err := soak.Create(path, soak.Header{Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cp.Append(win(i)); err != nil {
			t.Fatal(err)
		}
	}
	cp.Close()
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}
