package open_test

import (
	"context"
	"testing"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/store/open"
	"github.com/hilrig/hilrig/report/store/pgtest"
	"github.com/hilrig/hilrig/report/store/storetest"
)

// mainCommandSeconds is the main command's wall time on the sim rack on
// 2 cores (README: "about 8 minutes"), the denominator of the store's
// share.
const mainCommandSeconds = 8 * 60

// suites is how many suite processes a run has, each writing its part.
const suites = 9

// benchRunStore times everything the harness does with the store for one
// run of 86 cases: per suite process, open + Begin + close at its start
// and open + Put of its share of the cases + close at its report (as
// harness.BeginStore and WriteReport do), and reports the total per run
// and as a share of the main command's wall time.
func benchRunStore(b *testing.B, dsn, reportDir string) {
	ctx := context.Background()
	r := storetest.Run("overhead", 0, 86, 20000)
	parts := make([]*report.Result, suites)
	for i := range parts {
		p := *r
		p.Cases = nil
		for k := i; k < len(r.Cases); k += suites {
			c := r.Cases[k]
			c.Suite = "suite-" + string(rune('a'+i))
			p.Cases = append(p.Cases, c)
		}
		parts[i] = &p
	}
	n := 0
	for b.Loop() {
		n++
		id := "run-" + string(rune('A'+n%26)) + "-" + itoa(n)
		for _, p := range parts {
			p.Run.ID = id
			s, err := open.Open(ctx, dsn, reportDir, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Begin(ctx, p.Run, p.Cases[0].Suite); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		for _, p := range parts {
			s, err := open.Open(ctx, dsn, reportDir, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Put(ctx, p, p.Cases[0].Suite); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	}
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(per*1e3, "store-ms/run")
	b.ReportMetric(100*per/mainCommandSeconds, "pct-of-8min-run")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// go test -run '^$' -bench RunStore ./report/store/open
func BenchmarkRunStore(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchRunStore(b, "", b.TempDir()) })
	b.Run("postgres", func(b *testing.B) {
		c := pgtest.Start(b)
		benchRunStore(b, c.DSN(), b.TempDir())
	})
}
