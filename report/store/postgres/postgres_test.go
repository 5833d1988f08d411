package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/pgtest"
	"github.com/hilrig/hilrig/report/store/postgres"
	"github.com/hilrig/hilrig/report/store/storetest"
)

func opener(dsn string) storetest.Opener {
	return func(tb testing.TB, target int) (store.Store, error) {
		s, err := postgres.Open(context.Background(), dsn, "test", target)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

func TestPostgres(t *testing.T) {
	c := pgtest.Start(t)
	t.Run("conformance", func(t *testing.T) {
		dsn := c.DSN()
		storetest.Conformance(t, opener(dsn), func(tb testing.TB, stmt string) {
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				tb.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(stmt); err != nil {
				tb.Fatal(err)
			}
		})
	})
	t.Run("migration", func(t *testing.T) {
		storetest.Migration(t, opener(c.NewDatabase("mig")))
	})
	t.Run("concurrent first open migrates once", func(t *testing.T) {
		dsn := c.NewDatabase("race")
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				s, err := postgres.Open(context.Background(), dsn, "test", 0)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
	// PostgreSQL going down mid-run: the part begun before stays marked
	// incomplete, the Put fails within its deadline with an error naming
	// the database (password redacted) and saying it is unreachable.
	t.Run("down mid-run", func(t *testing.T) {
		dsn := strings.Replace(c.NewDatabase("down"), "hilrig@", "hilrig:secret@", 1)
		ctx := context.Background()
		s, err := postgres.Open(ctx, dsn, "test", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r := storetest.Run("down", 1, 5, 1000)
		if err := s.Begin(ctx, r.Run, "latency"); err != nil {
			t.Fatal(err)
		}
		c.Stop()
		defer func() {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = s.Put(tctx, r, "latency")
		if !errors.Is(err, store.ErrStore) || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "127.0.0.1") ||
			strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "down/run-0001") {
			t.Fatalf("err = %v, want unreachable naming the database (redacted) and the run", err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Runs(ctx, store.Filter{Rack: "down"})
		if err != nil || len(rs) != 1 || len(rs[0].Incomplete) != 1 || rs[0].Cases != 0 {
			t.Fatalf("after restart: %+v, %v", rs, err)
		}
		c.Stop() // the deferred Start brings it back for the other subtests
	})
}

func TestRedact(t *testing.T) {
	got := postgres.Redact("postgres://u:pw@h:5432/db?sslmode=disable&password=x")
	if strings.Contains(got, "pw") || strings.Contains(got, "=x&") || !strings.Contains(got, "password=xxxxx") || !strings.Contains(got, "u:xxxxx@h:5432/db") {
		t.Fatal(got)
	}
}

// go test -run '^$' -bench . ./report/store/postgres
func BenchmarkPostgres(b *testing.B) {
	c := pgtest.Start(b)
	ctx := context.Background()
	s, err := postgres.Open(ctx, c.DSN(), "bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Benchmarks(b, s)
}

// With planner statistics (autovacuum's ANALYZE), a baseline pick by
// branch or tag and a trend over a tagged run are served by indexes on
// a store of 1,000 runs, not by scanning every run or case.
func TestQueryPlansUseIndexes(t *testing.T) {
	c := pgtest.Start(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, c.NewDatabase("plans"), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 1000 {
		r := storetest.Run(fmt.Sprintf("rack-%d", i%10), i, 2, 20000)
		r.Run.GitBranch, r.Run.GitTags = "main", []string{fmt.Sprintf("t%d", i)}
		if i%200 == 0 {
			r.Run.GitBranch = "release"
		}
		if err := s.Put(ctx, r, "latency"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB().ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    store.Filter
		plan string
		want string
	}{
		{store.Filter{Branch: "release", Verdict: report.Pass, CompleteOnly: true}, "runs", "runs_branch"},
		{store.Filter{Tag: "t7"}, "runs", "run_tags_tag"},
		{store.Filter{Tag: "t7"}, "points-cases", "cases_pkey"},
	} {
		plans, err := s.Explain(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		got := plans[tc.plan]
		if !strings.Contains(got, tc.want) || strings.Contains(got, "Seq Scan on cases") || strings.Contains(got, "Seq Scan on runs") {
			t.Errorf("filter %+v, %s: want %s and no sequential scan of runs or cases:\n%s", tc.f, tc.plan, tc.want, got)
		}
		t.Logf("%s %+v:\n%s", tc.plan, tc.f, got)
	}
}
