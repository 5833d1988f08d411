package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report/store"
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

// A store that cannot grow (disk full; here the page cap, which fails the
// same way, SQLITE_FULL) fails the Put with an error naming the store and
// the run, and keeps what was stored before.
func TestFull(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, p, "test", sqlite.Options{MaxPageCount: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := storetest.Run("full", 0, 2, 1000)
	if err := s.Put(ctx, first, "latency"); err != nil {
		t.Fatal(err)
	}
	err = s.Put(ctx, storetest.Run("full", 1, 86, 1000), "latency")
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
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "results.db"), "bench", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("put-86", func(b *testing.B) { storetest.BenchmarkPut(b, s, 86) })
	b.Run("trend-1000x86", func(b *testing.B) { storetest.BenchmarkTrend(b, s, 1000, 86) })
}
