package storetest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/store"
)

// BenchmarkTrend fills s with runs runs of cases cases each (skipping
// what is there already) and times the trend query of one case and of
// all cases over them.
func BenchmarkTrend(b *testing.B, s store.Store, runs, cases int) {
	ctx := context.Background()
	have, err := s.Runs(ctx, store.Filter{Rack: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := len(have); i < runs; i++ {
		if err := s.Put(ctx, Run("bench", i, cases, 20000+int64(i%7)*100), "latency"); err != nil {
			b.Fatal(err)
		}
	}
	// Planner statistics, as PostgreSQL's autovacuum keeps them (and
	// SQLite's PRAGMA optimize): a freshly filled database has none.
	if d, ok := s.(interface{ DB() *sql.DB }); ok {
		if _, err := d.DB().ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
	// The plans of a trend over the newest tenth of the runs: the runs
	// by their start index, their cases by the cases primary key.
	recent := store.Filter{Rack: "bench", Since: T0.Add(time.Duration(runs-runs/10) * time.Hour)}
	if ex, ok := s.(interface {
		Explain(context.Context, store.Filter) (map[string]string, error)
	}); ok {
		plans, err := ex.Explain(ctx, recent)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{"points-runs", "points-cases"} {
			b.Logf("plan of %s (last %d runs):\n%s", q, runs/10, plans[q])
			if !strings.Contains(strings.ToLower(plans[q]), "index") {
				b.Errorf("%s uses no index:\n%s", q, plans[q])
			}
		}
	}
	b.Run("recent-tenth", func(b *testing.B) {
		for b.Loop() {
			ps, err := s.Points(ctx, recent)
			if err != nil || len(ps) != runs/10*cases {
				b.Fatalf("%d points, %v", len(ps), err)
			}
		}
	})
	b.Run("all-cases", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			ps, err := s.Points(ctx, store.Filter{Rack: "bench"})
			if err != nil || len(ps) != runs*cases {
				b.Fatalf("%d points, %v", len(ps), err)
			}
		}
		reportCPU(b, c0)
	})
	b.Run("one-case", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			ps, err := s.Points(ctx, store.Filter{Rack: "bench", Case: "latency/case-42"})
			if err != nil || len(ps) != runs {
				b.Fatalf("%d points, %v", len(ps), err)
			}
		}
		reportCPU(b, c0)
	})
}

// BenchmarkPut times storing one run of cases cases (Begin + Put, as the
// harness does) against the baseline measured in the same run: writing
// the same result as result.json plus its HTML report, which the main
// command does for every run anyway. It reports store/baseline as
// "store-vs-report-x".
func BenchmarkPut(b *testing.B, s store.Store, cases int) {
	ctx := context.Background()
	dir := b.TempDir()
	r := Run("put", 0, cases, 20000)
	var base, put float64
	b.Run("baseline-result-json+html", func(b *testing.B) {
		for b.Loop() {
			if err := r.WriteFile(filepath.Join(dir, "result.json")); err != nil {
				b.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, "index.html"))
			if err != nil {
				b.Fatal(err)
			}
			if err := reporthtml.Render(f, reporthtml.Input{Result: r}); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		base = float64(b.Elapsed()) / float64(b.N)
	})
	i := 0
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			i++
			r.Run.ID = "put-" + itoa(i)
			if err := s.Begin(ctx, r.Run, "latency"); err != nil {
				b.Fatal(err)
			}
			if err := s.Put(ctx, r, "latency"); err != nil {
				b.Fatal(err)
			}
		}
		put = float64(b.Elapsed()) / float64(b.N)
		if base > 0 {
			b.ReportMetric(put/base, "store-vs-report-x")
		}
	})
}

func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// Benchmarks runs the benchmarks every store reports, as sub-benchmarks
// of b: put-86 (BenchmarkPut of a run of 86 cases) and trend-1000x86
// (BenchmarkTrend over 1,000 such runs).
func Benchmarks(b *testing.B, s store.Store) {
	b.Run("put-86", func(b *testing.B) { BenchmarkPut(b, s, 86) })
	b.Run("trend-1000x86", func(b *testing.B) { BenchmarkTrend(b, s, 1000, 86) })
}
