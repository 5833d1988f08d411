package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/sqlite"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

func storeReport(t *testing.T) types.Report {
	c := latencyCase("latency", "shm 64", 1000, 2000, 3000)
	cj, _ := json.Marshal(&c)
	return types.Report{StartTime: time.Now().Add(-time.Minute), EndTime: time.Now(), SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "shm 64", State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{{Name: "hilrig.case", Value: types.ReportEntryValue{AsJSON: string(cj)}}}},
	}}
}

// Every suite's result lands in the default store (report_dir/results.db)
// as its part of the run; a suite that began and never wrote its report
// leaves the run marked incomplete with the other suites' cases kept.
func TestWriteReportStores(t *testing.T) {
	rack, prof, dir, cfgPath := simRackConfig(t)
	mk := func(suite string) *harness.TestContext {
		tc := &harness.TestContext{Suite: suite, ConfigPath: cfgPath, Rack: rack, Profile: prof, Filter: rack.LabelFilter(),
			ReportDir: filepath.Join(dir, "report"), RunID: "run-1", Started: time.Now()}
		tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
		return tc
	}
	var out bytes.Buffer
	lat, soakTC := mk("latency"), mk("soak")
	lat.BeginStore(&out)
	soakTC.BeginStore(&out) // "killed" before its report
	p, err := lat.WriteReport(storeReport(t), &out)
	if err != nil || p.StoreErr != nil {
		t.Fatalf("write: %v, store: %v\n%s", err, p.StoreErr, out.String())
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "report", "results.db"), "test", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(ctx, store.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Key != (store.RunKey{Rack: rack.Name + " (" + rack.File + ")", ID: "run-1"}) || r.Cases != 1 || len(r.Incomplete) != 1 || r.Incomplete[0] != "soak" {
		t.Fatalf("run %+v: want run-1 with the latency case, soak incomplete\n%s", r, out.String())
	}
	got, err := s.Load(ctx, r.Key)
	if err != nil || got.Cases[0].Histogram.Count() != 3 || got.Run.ID != "run-1" {
		t.Fatalf("load: %v %+v", err, got)
	}
}

// A corrupt store file: the suite's report is written anyway, the error
// names the store and says how to load the run later, and import does.
func TestWriteReportCorruptStore(t *testing.T) {
	rack, prof, dir, cfgPath := simRackConfig(t)
	tc := &harness.TestContext{Suite: "latency", ConfigPath: cfgPath, Rack: rack, Profile: prof, Filter: rack.LabelFilter(),
		ReportDir: filepath.Join(dir, "report"), RunID: "run-2", Started: time.Now()}
	tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
	if err := os.MkdirAll(tc.ReportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(tc.ReportDir, "results.db")
	if err := os.WriteFile(dbPath, bytes.Repeat([]byte("garbage!"), 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p, err := tc.WriteReport(storeReport(t), &out)
	if err != nil {
		t.Fatalf("a store failure failed the report: %v", err)
	}
	if p.StoreErr == nil || !strings.Contains(p.StoreErr.Error(), "sqlite:"+dbPath) || !strings.Contains(p.StoreErr.Error(), "not a SQLite database") ||
		!strings.Contains(p.StoreErr.Error(), "hilrig report import "+p.RunResult) || !strings.Contains(out.String(), p.StoreErr.Error()) {
		t.Fatalf("store error %v\noutput %s", p.StoreErr, out.String())
	}
	if _, err := report.ReadFile(p.RunResult); err != nil {
		t.Fatalf("result.json not written: %v", err)
	}
	// The lab moves the corrupt file aside and imports.
	if err := os.Rename(dbPath, dbPath+".corrupt"); err != nil {
		t.Fatal(err)
	}
	var iout, ierr bytes.Buffer
	if err := reportcli.RunWith(context.Background(), reportcli.Options{ReportDir: tc.ReportDir}, []string{"import", p.RunResult}, &iout, &ierr); err != nil {
		t.Fatalf("import: %v %s", err, ierr.String())
	}
	if !strings.Contains(iout.String(), "run "+rack.Name+" ("+rack.File+")/run-2, 1 cases") {
		t.Fatalf("import output %s", iout.String())
	}
}
