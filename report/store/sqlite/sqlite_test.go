package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/internal/sqlstore"
	"github.com/hilrig/hilrig/report/store/sqlite"
	"github.com/hilrig/hilrig/report/store/storetest"
)

func opener(path string) storetest.Opener {
	return func(tb testing.TB, target int) (store.Store, error) {
		s, err := sqlite.Open(context.Background(), path, "test", sqlite.Options{SchemaTarget: target})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

func execer(path string) storetest.Exec {
	return func(tb testing.TB, stmt string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			tb.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(stmt); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestConformance(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.db")
	storetest.Conformance(t, opener(p), execer(p))
}

func TestMigration(t *testing.T) {
	storetest.Migration(t, opener(filepath.Join(t.TempDir(), "results.db")))
}

// A file that is not a SQLite database (e.g. overwritten, or a result.json
// given by mistake) is refused with an error naming it, and left as it was.
func TestCorruptFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.db")
	junk := []byte(strings.Repeat("this is not a database\n", 400))
	if err := os.WriteFile(p, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), p, "test", sqlite.Options{})
	if !errors.Is(err, store.ErrStore) || !strings.Contains(err.Error(), "sqlite:"+p) || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("err = %v, want ErrStore naming %s and saying it is not a database", err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != string(junk) {
		t.Fatal("the corrupt file was modified")
	}
}

// A database whose pages are damaged after the header (a torn write on a
// crash without fsync) is reported as corrupt, naming the file.
func TestDamagedPages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.db")
	s, err := sqlite.Open(context.Background(), p, "test", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), storetest.Run("r", 1, 20, 1000), "latency"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < len(b); i++ { // keep page 1 (header and schema root), trash the rest
		b[i] = 0xA5
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(p + "-wal")
	os.Remove(p + "-shm")
	s2, err := sqlite.Open(context.Background(), p, "test", sqlite.Options{})
	if err == nil {
		defer s2.Close()
		_, err = s2.Runs(context.Background(), store.Filter{})
	}
	if !errors.Is(err, store.ErrStore) || !strings.Contains(err.Error(), "sqlite:"+p) ||
		!(strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "not a SQLite database")) {
		t.Fatalf("err = %v, want a corruption error naming %s", err, p)
	}
}

// openTemp opens a new store, results.db in tb's temporary directory,
// as version (the hilrig version stamped on what it stores) with o,
// closed when tb ends; it returns the store and the file's path.
func openTemp(tb testing.TB, version string, o sqlite.Options) (*sqlstore.Store, string) {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "results.db")
	s, err := sqlite.Open(context.Background(), p, version, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, p
}

// A store that cannot grow (disk full; here the page cap, which fails the
// same way, SQLITE_FULL) fails the Put with an error naming the store and
// the run, and keeps what was stored before.
func TestFull(t *testing.T) {
	ctx := context.Background()
	s, p := openTemp(t, "test", sqlite.Options{MaxPageCount: 24})
	first := storetest.Run("full", 0, 2, 1000)
	if err := s.Put(ctx, first, "latency"); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, storetest.Run("full", 1, 86, 1000), "latency")
	if !errors.Is(err, store.ErrStore) || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "full/run-0001") ||
		!strings.Contains(err.Error(), "sqlite:"+p) {
		t.Fatalf("err = %v, want disk full naming the store and run", err)
	}
	if got, err := s.Load(ctx, store.KeyOf(first.Run)); err != nil || len(got.Cases) != 2 {
		t.Fatalf("earlier run lost: %v", err)
	}
	if _, err := s.Load(ctx, store.RunKey{Rack: "full", ID: "run-0001"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("half-written run visible: %v", err)
	}
}

// go test -run '^$' -bench . ./report/store/sqlite
func BenchmarkSQLite(b *testing.B) {
	s, _ := openTemp(b, "bench", sqlite.Options{})
	storetest.Benchmarks(b, s)
}

// The queries of a baseline pick (Runs by rack, branch, tag) and of a
// trend over some runs (Points by rack) are served by indexes, not by
// scanning every run or every case. (A trend over every run reads every
// case: a scan is right there.)
func TestQueryPlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, "test", sqlite.Options{})
	for i := range 50 {
		r := storetest.Run("rack-"+strconv.Itoa(i%10), i, 10, 20000)
		r.Run.GitBranch, r.Run.GitTags = "main", []string{"t" + strconv.Itoa(i)}
		if err := s.Put(ctx, r, "latency"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB().ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    store.Filter
		plan string // query → substrings its plan must hold
		want []string
	}{
		{store.Filter{Rack: "rack-3"}, "runs", []string{"SEARCH r USING INDEX sqlite_autoindex_runs_1 (rack=?)"}},
		{store.Filter{Branch: "main", Verdict: report.Pass, CompleteOnly: true}, "runs", []string{"USING INDEX runs_branch (git_branch=?)"}},
		{store.Filter{Tag: "t7"}, "runs", []string{"run_tags_tag (tag=?"}},
		{store.Filter{Rack: "rack-3"}, "points-runs", []string{"SEARCH r USING INDEX sqlite_autoindex_runs_1 (rack=?)"}},
		{store.Filter{Rack: "rack-3"}, "points-cases", []string{"SEARCH c USING INDEX sqlite_autoindex_cases_1 (run=?)"}},
		{store.Filter{Tag: "t7"}, "points-cases", []string{"SEARCH c USING INDEX sqlite_autoindex_cases_1 (run=?)"}},
	} {
		plans, err := s.Explain(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		got := plans[c.plan]
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("filter %+v, %s: plan lacks %q:\n%s", c.f, c.plan, w, got)
			}
		}
		if strings.Contains(got, "SCAN r\n") || strings.HasSuffix(got, "SCAN r") || strings.Contains(got, "SCAN c") {
			t.Errorf("filter %+v, %s: scans a table:\n%s", c.f, c.plan, got)
		}
	}
}
