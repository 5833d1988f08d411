package harness_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/pgtest"
	"github.com/hilrig/hilrig/report/store/postgres"
	"github.com/hilrig/hilrig/report/store/sqlite"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// suiteTC is a latency suite's context writing under dir with results
// (empty: the default SQLite file).
func suiteTC(t *testing.T, results, runID string) (*harness.TestContext, string) {
	t.Helper()
	rack, prof, dir, cfgPath := simRackConfig(t)
	tc := &harness.TestContext{Suite: "latency", ConfigPath: cfgPath, Rack: rack, Profile: prof, Filter: rack.LabelFilter(),
		ReportDir: filepath.Join(dir, "report"), RunID: runID, Started: time.Now(), Config: &fixtures.Config{Results: results}}
	tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
	if err := os.MkdirAll(tc.ReportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return tc, dir
}

// mustImport loads file into the store dsn with `hilrig report import`.
func mustImport(t *testing.T, dsn, reportDir, file string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := reportcli.RunWith(context.Background(), reportcli.Options{ReportDir: reportDir}, []string{"import", "--results", dsn, file}, &out, &errb); err != nil {
		t.Fatalf("import: %v\n%s", err, errb.String())
	}
	return out.String()
}

// A store written by a newer hilrig: the suite's report is written, the
// error names the store, says it is newer and how to load the run later;
// the store is left untouched; the run imports into a store this build
// reads.
func TestWriteReportNewerSchemaStore(t *testing.T) {
	tc, dir := suiteTC(t, "", "run-newer")
	dbPath := filepath.Join(tc.ReportDir, "results.db")
	s, err := sqlite.Open(context.Background(), dbPath, "test", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`UPDATE hilrig_schema SET version = 99, written_by = 'hilrig v9.0.0'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var out bytes.Buffer
	p, err := tc.WriteReport(storeReport(t), &out)
	if err != nil {
		t.Fatalf("a store failure failed the report: %v", err)
	}
	if !errors.Is(p.StoreErr, store.ErrNewerSchema) || !strings.Contains(p.StoreErr.Error(), "sqlite:"+dbPath) ||
		!strings.Contains(p.StoreErr.Error(), "v9.0.0") || !strings.Contains(p.StoreErr.Error(), "hilrig report import "+p.RunResult) ||
		!strings.Contains(out.String(), p.StoreErr.Error()) {
		t.Fatalf("store error %v\noutput %s", p.StoreErr, out.String())
	}
	if _, err := report.ReadFile(p.RunResult); err != nil {
		t.Fatalf("result.json not written: %v", err)
	}
	_, err = sqlite.Open(context.Background(), dbPath, "test", sqlite.Options{})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("the newer store was changed: reopen gives %v", err)
	}
	other := "sqlite:" + filepath.Join(dir, "other.db")
	if o := mustImport(t, other, tc.ReportDir, p.RunResult); !strings.Contains(o, "/run-newer, 1 cases") {
		t.Fatalf("import output %s", o)
	}
}

// PostgreSQL goes down after the suite began its part: the report is
// written, the error names the database (password redacted) and says how
// to load the run; after PostgreSQL is back, import loads the run and
// completes the part.
func TestWriteReportPostgresDownMidRun(t *testing.T) {
	c := pgtest.Start(t)
	dsn := strings.Replace(c.DSN(), "hilrig@", "hilrig:secret@", 1)
	tc, _ := suiteTC(t, dsn, "run-pgdown")
	var out bytes.Buffer
	tc.BeginStore(&out)
	if out.Len() != 0 {
		t.Fatalf("begin: %s", out.String())
	}
	c.Stop()
	start := time.Now()
	p, err := tc.WriteReport(storeReport(t), &out)
	if err != nil {
		t.Fatalf("a store failure failed the report: %v", err)
	}
	if took := time.Since(start); took > harness.StoreTimeout+10*time.Second {
		t.Errorf("the report waited %v on a down store", took)
	}
	msg := fmt.Sprint(p.StoreErr)
	if !errors.Is(p.StoreErr, store.ErrStore) || !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d", c.Port)) || strings.Contains(msg, "secret") ||
		!strings.Contains(msg, "hilrig report import "+p.RunResult) {
		t.Fatalf("store error %v", p.StoreErr)
	}
	if _, err := report.ReadFile(p.RunResult); err != nil {
		t.Fatalf("result.json not written: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.RunKey{Rack: tc.Rack.Name + " (" + tc.Rack.File + ")", ID: "run-pgdown"}
	if rs, err := s.Runs(ctx, store.Filter{}); err != nil || len(rs) != 1 || rs[0].Key != k || len(rs[0].Incomplete) != 1 || rs[0].Cases != 0 {
		t.Fatalf("before import: %+v, %v (want the begun run, incomplete, no cases)", rs, err)
	}
	mustImport(t, dsn, tc.ReportDir, p.RunResult)
	if rs, err := s.Runs(ctx, store.Filter{}); err != nil || len(rs) != 1 || len(rs[0].Incomplete) != 0 || rs[0].Cases != 1 {
		t.Fatalf("after import: %+v, %v (want complete with its case)", rs, err)
	}
}
