package harness_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/labels"
)

// checkFile lets CI gate a finished run:
//
//	go test -count=1 ./suites/internal/harness -run TestReportFile -args -hilrig.check=out/report/result.json
//
// (a relative path is relative to the module root).
var checkFile = flag.String("hilrig.check", "", "result file to check (TestReportFile)")

func TestReportFile(t *testing.T) {
	if *checkFile == "" {
		t.Skip("no -hilrig.check=RESULT.json given")
	}
	path := *checkFile
	if !filepath.IsAbs(path) { // relative to the module root, where CI runs
		dir, _ := os.Getwd()
		for dir != filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			dir = filepath.Dir(dir)
		}
		path = filepath.Join(dir, path)
	}
	if err := harness.CheckFile(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: every case measured something or states its failure", path)
}

func latencyCase(suite, name string, samples ...int64) report.Case {
	h := report.NewHistogram()
	for _, s := range samples {
		h.Record(s)
	}
	c := report.Case{Suite: suite, Name: name, Histogram: h, Sent: int64(len(samples)), Delivered: int64(len(samples)),
		Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC"}}
	c.Finalize()
	return c
}

func TestCheck(t *testing.T) {
	good := latencyCase("latency", "shm 64", 1000, 2000)
	noMethod := latencyCase("latency", "shm 64 no method", 1000)
	noMethod.Method = report.Method{}
	tests := []struct {
		name    string
		cases   []report.Case
		wantErr string
	}{
		{"no cases", nil, "no cases"},
		{"good", []report.Case{good}, ""},
		{"empty case", []report.Case{good, {Suite: "latency", Name: "udp 64"}}, `case "latency/udp 64" is empty`},
		{"failure is not empty", []report.Case{{Suite: "latency", Name: "udp 64", Failure: "agent died"}}, ""},
		{"throughput only", []report.Case{{Suite: "throughput", Name: "shm 1MiB", ThroughputMBps: 812}}, ""},
		{"method missing", []report.Case{noMethod}, "has latency samples but no method"},
		{"unnamed", []report.Case{{Suite: "x", Delivered: 1}}, "cases[0] has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := report.NewResult(report.RunInfo{})
			r.Cases = tt.cases
			err := harness.Check(r)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			case tt.wantErr != "" && !errors.Is(err, harness.ErrEmpty):
				t.Fatalf("error %v does not wrap ErrEmpty", err)
			}
		})
	}
}

func TestMergeRun(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	write := func(file string, start time.Duration, boards []report.BoardInfo, cases ...report.Case) {
		t.Helper()
		r := report.NewResult(report.RunInfo{Rack: "sim", Start: t0.Add(start), End: t0.Add(start + time.Minute), Boards: boards})
		r.Cases = cases
		r.Notes = []string{"shared note"}
		if err := r.WriteFile(filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	floor := report.Summary{Count: 10, P99: 50000}
	write("latency.json", 2*time.Minute, []report.BoardInfo{{Name: "board-a", Kernel: "6.1", Tuning: &report.HostTuning{Isolcpus: "1"}}},
		latencyCase("latency", "shm 64", 10000))
	write("preflight.json", 0, []report.BoardInfo{{Name: "board-a", AgentVersion: "v1", WakeupFloor: &floor}},
		latencyCase("preflight", "wake-up floor", 60000))
	write("result.json", 0, nil, latencyCase("stale", "must be ignored", 1)) // the previous merge
	if err := os.WriteFile(filepath.Join(dir, "ginkgo-latency.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := harness.MergeRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Cases); got != 2 {
		t.Fatalf("merged %d cases, want 2 (result.json and ginkgo-*.json ignored)", got)
	}
	if m.Cases[0].Suite != "preflight" || m.Cases[1].Suite != "latency" {
		t.Errorf("case order %s, %s: want preflight before latency", m.Cases[0].Suite, m.Cases[1].Suite)
	}
	if !m.Run.Start.Equal(t0) || !m.Run.End.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("run spans %v..%v, want %v..%v", m.Run.Start, m.Run.End, t0, t0.Add(3*time.Minute))
	}
	if len(m.Run.Boards) != 1 {
		t.Fatalf("boards %+v: want board-a merged into one", m.Run.Boards)
	}
	b := m.Run.Boards[0]
	if b.Kernel != "6.1" || b.AgentVersion != "v1" || b.WakeupFloor == nil || b.WakeupFloor.P99 != 50000 || b.Tuning == nil || b.Tuning.Isolcpus != "1" {
		t.Errorf("merged board %+v: want kernel, agent version, wake-up floor and tuning from both files", b)
	}
	if len(m.Notes) != 1 {
		t.Errorf("notes %q: want the shared note once", m.Notes)
	}
	if err := harness.Check(m); err != nil {
		t.Errorf("merged result fails Check: %v", err)
	}
}

func TestMergeRunEmptyDir(t *testing.T) {
	if _, err := harness.MergeRun(t.TempDir()); !errors.Is(err, harness.ErrEmpty) {
		t.Fatalf("got %v, want ErrEmpty", err)
	}
}

func TestMergeRunBadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "latency.json"), []byte(`{"schema_version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := harness.MergeRun(dir)
	if !errors.Is(err, report.ErrSchemaVersion) || !strings.Contains(err.Error(), "latency.json") {
		t.Fatalf("got %v, want a schema version error naming latency.json", err)
	}
}

func TestRunID(t *testing.T) {
	t.Setenv("HILRIG_RUN_ID", "ci 42/a")
	if got := harness.RunID(); got != "ci_42_a" {
		t.Errorf("RunID() = %q, want the sanitised $HILRIG_RUN_ID", got)
	}
	t.Setenv("HILRIG_RUN_ID", "")
	a, b := harness.RunID(), harness.RunID()
	if a != b || !strings.Contains(a, "-p") {
		t.Errorf("RunID() = %q then %q: want a stable <start>-p<ppid>", a, b)
	}
}

// simRackConfig returns the sim rack, its default bounds profile, a
// fresh temporary directory and the path of a ginkgo.config in it that
// selects the sim rack.
func simRackConfig(t *testing.T) (*fixtures.Rack, *fixtures.BoundsProfile, string, string) {
	t.Helper()
	rack, err := fixtures.SimRackFor(fixtures.SimEnv{})
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := rack.Profile("")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ginkgo.config")
	if err := os.WriteFile(cfgPath, []byte("rack: sim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rack, prof, dir, cfgPath
}

// TestWriteReport drives WriteReport with a Ginkgo report as a parallel
// process delivers it (entries as JSON only): the suite result, the merged
// result and the HTML are written, a failed spec without a case becomes a
// failed case, and notes and boards arrive.
func TestWriteReport(t *testing.T) {
	rack, prof, dir, cfgPath := simRackConfig(t)
	tc := &harness.TestContext{Suite: "latency", ConfigPath: cfgPath, Rack: rack, Profile: prof, Filter: rack.LabelFilter(),
		ReportDir: filepath.Join(dir, "report"), RunID: "test-run", Started: time.Now()}
	tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
	c := latencyCase("latency", "shm 64", 1000, 2000, 3000)
	c.Trace = &report.TraceRef{Reason: "max 5ms > bound 1ms in window 0", Summary: "hlr-hog ran", Method: "tracefs"}
	cj, _ := json.Marshal(&c)
	chrome := `{"traceEvents":[{"name":"hlr-hog","ph":"X","ts":1,"dur":5000,"pid":1,"tid":1}]}`
	bj, _ := json.Marshal(report.BoardInfo{Name: "board-a", AgentVersion: "hilrig v1.2.3"})
	nj, _ := json.Marshal("a note")
	entry := func(name, js string) types.ReportEntry {
		return types.ReportEntry{Name: name, Value: types.ReportEntryValue{AsJSON: js}}
	}
	r := types.Report{StartTime: time.Now().Add(-time.Minute), EndTime: time.Now(), SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "shm 64", State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{entry("hilrig.case", string(cj)), entry("hilrig.trace", chrome), entry("hilrig.board", string(bj)), entry("hilrig.note", string(nj))}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "udp 64", ContainerHierarchyTexts: []string{"latency"},
			State: types.SpecStateFailed, Failure: types.Failure{Message: "agent died"}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "skipped one", State: types.SpecStateSkipped},
	}}
	var out strings.Builder
	p, err := tc.WriteReport(r, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), p.HTML) {
		t.Errorf("output %q does not say where the report is", out.String())
	}
	res, err := report.ReadFile(p.Result)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 2 {
		t.Fatalf("%d cases, want the recorded one and the failed spec", len(res.Cases))
	}
	if res.Cases[0].Histogram == nil || res.Cases[0].Histogram.Count() != 3 {
		t.Errorf("case histogram did not survive the JSON entry: %+v", res.Cases[0].Histogram)
	}
	if f := res.Cases[1]; f.Verdict != report.Fail || !strings.Contains(f.Failure, "agent died") || f.Name != "udp 64" {
		t.Errorf("failed spec became %+v, want a failed case naming the failure", f)
	}
	if res.Run.Version != "v1.2.3" || len(res.Run.Boards) != 1 {
		t.Errorf("version %q, boards %+v: want the agents' build and board-a", res.Run.Version, res.Run.Boards)
	}
	if !slices.Contains(res.Notes, "a note") || !strings.Contains(strings.Join(res.Notes, "\n"), "needs:multi-host skipped") {
		t.Errorf("notes %q: want the spec's note and the skipped capabilities", res.Notes)
	}
	for _, f := range []string{p.Suite, p.RunResult, p.RunHTML, p.HTML} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	html, _ := os.ReadFile(p.HTML)
	if !strings.Contains(string(html), "<svg") {
		t.Error("HTML report has no plots")
	}
	// The case's trace JSON survived the report entries: stored in the
	// run's directory, linked from both results relative to each.
	for _, rf := range []string{p.Result, p.RunResult} {
		r, err := report.ReadFile(rf)
		if err != nil {
			t.Fatal(err)
		}
		tr := r.Cases[0].Trace
		if tr == nil || tr.File == "" {
			t.Fatalf("%s: case trace %+v has no file", rf, tr)
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(rf), filepath.FromSlash(tr.File)))
		if err != nil || string(b) != chrome {
			t.Errorf("%s: trace file %s: %q, %v; want the recorded trace JSON", rf, tr.File, b, err)
		}
		if h, _ := os.ReadFile(filepath.Join(filepath.Dir(rf), "index.html")); !strings.Contains(string(h), `href="`+tr.File+`"`) {
			t.Errorf("%s: the HTML beside it does not link %s", rf, tr.File)
		}
	}
}

// TestLabelError: a spec labelled outside the vocabulary (its own label
// or a container's) is named with the bad label; one inside it passes.
func TestLabelError(t *testing.T) {
	ok := types.SpecReport{LeafNodeText: "fine", LeafNodeLabels: []string{labels.Smoke},
		ContainerHierarchyLabels: [][]string{{labels.Latency, labels.NeedsScope}}}
	if err := harness.LabelError(ok); err != nil {
		t.Errorf("vocabulary labels rejected: %v", err)
	}
	for _, bad := range []types.SpecReport{
		{LeafNodeText: "typo", LeafNodeLabels: []string{"latancy"}},
		{LeafNodeText: "typo", ContainerHierarchyLabels: [][]string{{labels.Latency}, {"latancy"}}},
	} {
		err := harness.LabelError(bad)
		if err == nil || !strings.Contains(err.Error(), "latancy") || !strings.Contains(err.Error(), "typo") {
			t.Errorf("labels %v: error %v, want one naming the spec and latancy", bad.Labels(), err)
		}
	}
}

// TestRepetitionsShortForm: on the sim rack (CI's short form) a
// comparison cell runs short_repetitions times, on a lab rack
// repetitions times.
func TestRepetitionsShortForm(t *testing.T) {
	dir := t.TempDir()
	base := "payload_sizes: [64]\nrates_hz: [1000]\nmessages: 100\nrepetitions: 6\nshort_repetitions: 3\n"
	for _, tc := range []struct {
		rack string
		want int
	}{
		{"sim", 3},
		{mustAbs(t, "../../../fixtures/examples/vm-pair.yaml"), 6},
	} {
		p := filepath.Join(dir, "ginkgo.config")
		if err := os.WriteFile(p, []byte("rack: "+tc.rack+"\n"+base), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(fixtures.ConfigEnv, p)
		ctx, err := harness.Load("latency", dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.rack, err)
		}
		// go test -short makes every rack short.
		want := tc.want
		if testing.Short() {
			want = 3
		}
		if ctx.Repetitions != want {
			t.Errorf("rack %s: %d repetitions, want %d", tc.rack, ctx.Repetitions, want)
		}
	}
	if !harness.ShortForm("sim") {
		t.Error("the sim rack is not the short form")
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
