// Package storetest is the conformance test every store.Store backend
// passes (run from each backend's tests against a real database), plus
// fixtures shared by tests and benchmarks.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/internal/sqlstore"
)

// Opener opens the backend's database under test: the same database on
// every call (so reopening sees what was written). target is the schema
// version to migrate to, 0 for the newest.
type Opener func(tb testing.TB, target int) (store.Store, error)

// Exec runs a statement directly on the backend's database (to damage
// it: set a newer schema version).
type Exec func(tb testing.TB, stmt string)

// T0 is the start of the first fixture run.
var T0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// Run builds a run of n cases ("latency/case-00" …) on rack, started at
// T0 plus i hours, with latencies around p50 ns (one histogram per case,
// 200 samples), boards board-a and board-b, transports shm-loan and udp
// alternating.
func Run(rack string, i, n int, p50 int64) *report.Result {
	start := T0.Add(time.Duration(i) * time.Hour)
	r := report.NewResult(report.RunInfo{ID: fmt.Sprintf("run-%04d", i), Rack: rack, Machine: "ctl", Kernel: "6.1.0",
		CPUModel: "test CPU", CPUGovernor: "performance", GitRevision: fmt.Sprintf("%07x", 0xabc000+i), Version: "v1.0.0",
		Config: "rack: " + rack, Start: start, End: start.Add(10 * time.Minute),
		Boards: []report.BoardInfo{{Name: "board-a", Kernel: "6.1.0-rt"}, {Name: "board-b", CPUModel: "Cortex-A53"}}})
	for k := range n {
		h := report.NewHistogram()
		for s := range int64(200) {
			h.Record(p50 + (s-100)*p50/400 + int64(k))
		}
		tr := "shm-loan"
		if k%2 == 1 {
			tr = "udp"
		}
		c := report.NewCase(nil, report.CaseSpec{Suite: "latency", Name: fmt.Sprintf("case-%02d", k), Transport: tr, PayloadBytes: 64,
			Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC", UncertaintyNs: 50},
			Bounds: &report.Bounds{P99: time.Duration(3 * p50)}},
			report.Results{Sent: 200, Delivered: 200, Histogram: h})
		c.Notes = []string{"note " + tr}
		c.Finalize()
		r.Cases = append(r.Cases, *c)
	}
	return r
}

// Conformance runs the backend-independent checks against open.
func Conformance(t *testing.T, open Opener, exec Exec) {
	ctx := context.Background()
	must := func(s store.Store, err error) store.Store {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := must(open(t, 0))
	defer s.Close()

	t.Run("round trip", func(t *testing.T) {
		r := Run("rt", 1, 3, 20000)
		r.Notes = []string{"a run note"}
		r.Cases[1].Lost = 7
		if err := s.Begin(ctx, r.Run, "latency"); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, r, "latency"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, store.KeyOf(r.Run))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Cases) != 3 || got.Cases[1].Lost != 7 || got.Cases[0].Histogram == nil ||
			got.Cases[0].Histogram.Count() != 200 || got.Cases[2].Method != r.Cases[2].Method ||
			got.Cases[0].Bounds == nil || got.Cases[0].Bounds.P99 != r.Cases[0].Bounds.P99 ||
			len(got.Cases[0].Checks) == 0 || got.Cases[0].Verdict != report.Pass || got.Cases[1].Notes[0] != "note udp" {
			t.Fatalf("loaded cases differ: %+v", got.Cases)
		}
		if got.Run.GitRevision != r.Run.GitRevision || got.Run.CPUGovernor != "performance" || len(got.Run.Boards) != 2 ||
			got.Run.Boards[0].Kernel != "6.1.0-rt" || !got.Run.Start.Equal(r.Run.Start) || len(got.Notes) != 1 {
			t.Fatalf("loaded run differs: %+v notes %v", got.Run, got.Notes)
		}
		runs, err := s.Runs(ctx, store.Filter{Rack: "rt"})
		if err != nil || len(runs) != 1 || runs[0].Verdict != report.Pass || runs[0].Cases != 3 || len(runs[0].Incomplete) != 0 {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		// Put again (a re-import): replaced, not duplicated.
		if err := s.Put(ctx, r, "import"); err != nil {
			t.Fatal(err)
		}
		if runs, _ := s.Runs(ctx, store.Filter{Rack: "rt"}); len(runs) != 1 || runs[0].Cases != 3 {
			t.Fatalf("re-put duplicated: %+v", runs)
		}
	})

	t.Run("killed midway keeps complete parts and marks the run incomplete", func(t *testing.T) {
		a := Run("kill", 1, 2, 20000)
		b := Run("kill", 1, 2, 30000)
		for i := range b.Cases {
			b.Cases[i].Suite = "soak"
		}
		for _, part := range []string{"latency", "soak"} {
			if err := s.Begin(ctx, a.Run, part); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Put(ctx, a, "latency"); err != nil {
			t.Fatal(err)
		}
		// The soak part fails while writing: a case that cannot be encoded
		// after one that can. Nothing of the part may land.
		b.Cases[1].Extra = map[report.ExtraKey]float64{"bad": math.NaN()}
		if err := s.Put(ctx, b, "soak"); err == nil || !strings.Contains(err.Error(), s.Name()) {
			t.Fatalf("put of an unencodable case: err = %v, want an error naming %s", err, s.Name())
		}
		got, err := s.Load(ctx, store.KeyOf(a.Run))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Cases) != 2 || got.Cases[0].Suite != "latency" {
			t.Fatalf("want the 2 latency cases only, got %d: %+v", len(got.Cases), got.Cases)
		}
		if n := got.Notes[len(got.Notes)-1]; !strings.Contains(n, "incomplete") || !strings.Contains(n, "soak") {
			t.Fatalf("no incomplete note: %v", got.Notes)
		}
		runs, err := s.Runs(ctx, store.Filter{Rack: "kill"})
		if err != nil || len(runs) != 1 || len(runs[0].Incomplete) != 1 || runs[0].Incomplete[0] != "soak" {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		if runs, _ := s.Runs(ctx, store.Filter{Rack: "kill", CompleteOnly: true}); len(runs) != 0 {
			t.Fatalf("CompleteOnly listed an incomplete run: %+v", runs)
		}
	})

	t.Run("import completes the parts whose suites it holds", func(t *testing.T) {
		r := Run("imp", 1, 2, 20000) // suite "latency"
		for _, part := range []string{"latency", "soak"} {
			if err := s.Begin(ctx, r.Run, part); err != nil {
				t.Fatal(err)
			}
		}
		// The store failed at the suites' Put; result.json is imported.
		if err := s.Put(ctx, r, "import"); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs(ctx, store.Filter{Rack: "imp"})
		if err != nil || len(runs) != 1 || strings.Join(runs[0].Incomplete, ",") != "soak" || runs[0].Cases != 2 {
			t.Fatalf("runs = %+v, %v; want latency completed by the import, soak (no cases) still incomplete", runs, err)
		}
	})

	t.Run("racks writing at once never conflict", func(t *testing.T) {
		const racks, runs = 6, 5
		var wg sync.WaitGroup
		errs := make(chan error, racks*runs)
		for k := range racks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rack := fmt.Sprintf("conc-%d", k)
				for i := range runs {
					r := Run(rack, i, 10, 20000)
					if err := s.Begin(ctx, r.Run, "latency"); err != nil {
						errs <- err
						return
					}
					if err := s.Put(ctx, r, "latency"); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for k := range racks {
			rs, err := s.Runs(ctx, store.Filter{Rack: fmt.Sprintf("conc-%d", k)})
			if err != nil || len(rs) != runs {
				t.Fatalf("rack %d: %d runs, %v", k, len(rs), err)
			}
			for _, r := range rs {
				if r.Cases != 10 || len(r.Incomplete) != 0 {
					t.Fatalf("rack %d run %+v", k, r)
				}
			}
		}
	})

	t.Run("points and filters", func(t *testing.T) {
		for i := range 4 {
			r := Run("flt", i, 4, 20000+int64(i)*1000)
			if i == 3 {
				r.Run.Boards = []report.BoardInfo{{Name: "board-z"}}
			}
			if err := s.Put(ctx, r, "latency"); err != nil {
				t.Fatal(err)
			}
		}
		count := func(f store.Filter) int {
			f.Rack = "flt"
			ps, err := s.Points(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(ps); i++ {
				if ps[i].Key() == ps[i-1].Key() && ps[i].Start.Before(ps[i-1].Start) {
					t.Fatalf("points out of order: %+v then %+v", ps[i-1], ps[i])
				}
			}
			return len(ps)
		}
		for _, c := range []struct {
			f    store.Filter
			want int
		}{
			{store.Filter{}, 16},
			{store.Filter{Case: "case-01"}, 4},
			{store.Filter{Case: "latency/case-0"}, 16},
			{store.Filter{Case: "case_0"}, 0}, // _ is literal, not a wildcard
			{store.Filter{Middleware: "shm"}, 8},
			{store.Filter{Middleware: "udp"}, 8},
			{store.Filter{Board: "board-z"}, 4},
			{store.Filter{Board: "board-a"}, 12},
			{store.Filter{Since: T0.Add(2 * time.Hour)}, 8},
			{store.Filter{Revision: "0abc003"}, 4},
		} {
			if got := count(c.f); got != c.want {
				t.Errorf("filter %+v: %d points, want %d", c.f, got, c.want)
			}
		}
		ps, _ := s.Points(ctx, store.Filter{Rack: "flt", Case: "case-00"})
		if len(ps) != 4 || ps[3].P50 <= ps[0].P50 || ps[0].Count != 200 || ps[0].Sent != 200 || ps[0].Transport != "shm-loan" {
			t.Fatalf("points = %+v", ps)
		}
	})

	t.Run("a reaction case keeps its route, program figures and misses", func(t *testing.T) {
		r := Run("react", 1, 1, 20000)
		rt := report.Route{From: "board-a", To: "board-b", SameKernel: true, Class: report.ClassSharedMemory}
		h := report.NewHistogram()
		h.Record(120_000)
		c := report.NewCase(&rt, report.CaseSpec{Suite: "reaction", Name: "imu reaction imu → cmd", Transport: "dut topic→topic",
			Middleware: "hilrig", PayloadBytes: 64, Method: report.Method{Kind: report.OneWay, Clocks: "controller CLOCK_MONOTONIC"}},
			report.Results{Sent: 300, Delivered: 294, Lost: 6, Histogram: h, CPUPercent: 1.3, RSSBytes: 5 << 20})
		c.Add(report.Addition{By: "storetest", Extra: map[report.ExtraKey]float64{report.ExtraDUTMissRate: 0.02, report.ExtraDUTRestarts: 1}})
		c.Finalize()
		r.Cases = append(r.Cases, *c)
		if err := s.Put(ctx, r, "reaction"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, store.KeyOf(r.Run))
		if err != nil {
			t.Fatal(err)
		}
		g := got.Cases[1]
		if !g.IsReaction() || g.Route == nil || *g.Route != rt || g.CPUPercent != 1.3 || g.RSSBytes != 5<<20 ||
			g.Extra[report.ExtraDUTMissRate] != 0.02 || g.Extra[report.ExtraDUTRestarts] != 1 || g.Lost != 6 {
			t.Fatalf("loaded reaction case differs: %+v", g)
		}
		ps, err := s.Points(ctx, store.Filter{Rack: "react", Case: "reaction/"})
		if err != nil || len(ps) != 1 || ps[0].Sent != 300 || ps[0].Lost != 6 || ps[0].P50 == 0 {
			t.Fatalf("reaction points %+v, %v: the trend's loss is the miss rate", ps, err)
		}
	})

	t.Run("soak windows", func(t *testing.T) {
		r := Run("soak", 1, 1, 20000)
		if err := s.Put(ctx, r, "soak"); err != nil {
			t.Fatal(err)
		}
		h := report.NewHistogram()
		h.Record(1000)
		lg := &soak.Log{Windows: []soak.Window{
			{Index: 0, Start: T0, End: T0.Add(10 * time.Second), Agents: []soak.AgentWindow{
				{Agent: "a", RSSBytes: 100, Streams: []soak.StreamWindow{{Stream: "s", Sent: 10, Histogram: h}}},
				{Agent: "b", RSSBytes: 200}}},
			{Index: 1, Start: T0.Add(10 * time.Second), End: T0.Add(20 * time.Second), Agents: []soak.AgentWindow{{Agent: "a", RSSBytes: 110}}},
		}}
		if err := s.PutSoak(ctx, store.KeyOf(r.Run), lg); err != nil {
			t.Fatal(err)
		}
		ws, err := s.SoakWindows(ctx, store.KeyOf(r.Run))
		if err != nil || len(ws) != 2 || len(ws[0].Agents) != 2 || ws[1].Agents[0].RSSBytes != 110 ||
			ws[0].Agents[0].Streams[0].Sent != 10 || ws[0].Agents[0].Streams[0].Histogram != nil {
			t.Fatalf("windows = %+v, %v", ws, err)
		}
		if err := s.PutSoak(ctx, store.RunKey{Rack: "soak", ID: "nope"}, lg); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("soak of an unknown run: %v", err)
		}
	})

	t.Run("branch and tags", func(t *testing.T) {
		// Runs 0..4 on rack "ref": 0, 1 on main (1 tagged v1.0 and
		// lab-ok), 2 on main failing, 3 on feature/x, 4 on main tagged
		// v1.0 again (a re-run at the tag) but incomplete.
		for i := range 5 {
			r := Run("ref", i, 2, 20000)
			r.Run.GitBranch = "main"
			switch i {
			case 1:
				r.Run.GitTags = []string{"lab-ok", "v1.0"}
			case 2:
				r.Cases[0].Verdict = report.Fail
			case 3:
				r.Run.GitBranch = "feature/x"
			case 4:
				r.Run.GitTags = []string{"v1.0"}
				if err := s.Begin(ctx, r.Run, "soak"); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Put(ctx, r, "latency"); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(f store.Filter) []string {
			t.Helper()
			f.Rack = "ref"
			rs, err := s.Runs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rs {
				out = append(out, r.Key.ID+"@"+r.Branch)
			}
			return out
		}
		for _, c := range []struct {
			f    store.Filter
			want string
		}{
			{store.Filter{Branch: "main"}, "run-0004@main run-0002@main run-0001@main run-0000@main"},
			{store.Filter{Branch: "main", Verdict: report.Pass, CompleteOnly: true}, "run-0001@main run-0000@main"},
			{store.Filter{Branch: "feature/x"}, "run-0003@feature/x"},
			{store.Filter{Branch: "mai"}, ""}, // exact, not a prefix
			{store.Filter{Tag: "v1.0"}, "run-0004@main run-0001@main"},
			{store.Filter{Tag: "v1.0", Verdict: report.Pass, CompleteOnly: true}, "run-0001@main"},
			{store.Filter{Tag: "lab-ok"}, "run-0001@main"},
			{store.Filter{Tag: "v1"}, ""},
		} {
			if got := strings.Join(ids(c.f), " "); got != c.want {
				t.Errorf("filter %+v: %q, want %q", c.f, got, c.want)
			}
		}
		if ps, err := s.Points(ctx, store.Filter{Rack: "ref", Tag: "v1.0"}); err != nil || len(ps) != 4 {
			t.Errorf("points at tag v1.0: %d, %v", len(ps), err)
		}
		got, err := s.Load(ctx, store.RunKey{Rack: "ref", ID: "run-0001"})
		if err != nil || got.Run.GitBranch != "main" || strings.Join(got.Run.GitTags, ",") != "lab-ok,v1.0" {
			t.Fatalf("loaded %+v, %v", got.Run, err)
		}
	})

	t.Run("missing run", func(t *testing.T) {
		_, err := s.Load(ctx, store.RunKey{Rack: "x", ID: "y"})
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), s.Name()) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("migration from schema 1 keeps data", func(t *testing.T) {
		// Done on the same database: the schema is already newest, so
		// opening at 1 must not downgrade and must still read.
		old := must(open(t, 1))
		defer old.Close()
		if _, err := old.Load(ctx, store.KeyOf(Run("rt", 1, 0, 0).Run)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("newer schema is refused", func(t *testing.T) {
		exec(t, "UPDATE hilrig_schema SET version = 99, written_by = 'hilrig v9.9.9'")
		defer exec(t, fmt.Sprintf("UPDATE hilrig_schema SET version = %d", sqlstore.Version))
		_, err := open(t, 0)
		if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "v9.9.9") || !strings.Contains(err.Error(), s.Name()) {
			t.Fatalf("err = %v, want ErrNewerSchema naming the store and the writer", err)
		}
	})
}

// Migration checks that a database built at schema 1 and holding a run is
// migrated to the newest schema on open with the run intact. open must
// start from an empty database.
func Migration(t *testing.T, open Opener) {
	ctx := context.Background()
	old, err := open(t, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := Run("mig", 1, 2, 20000)
	if err := old.Put(ctx, r, "latency"); err != nil {
		t.Fatal(err)
	}
	if err := old.PutSoak(ctx, store.KeyOf(r.Run), &soak.Log{Windows: []soak.Window{{Agents: []soak.AgentWindow{{Agent: "a"}}}}}); err == nil {
		t.Fatal("schema 1 has no soak_windows table, yet PutSoak succeeded")
	}
	old.Close()
	s, err := open(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Load(ctx, store.KeyOf(r.Run))
	if err != nil || len(got.Cases) != 2 {
		t.Fatalf("after migration: %v, %+v", err, got)
	}
	if err := s.PutSoak(ctx, store.KeyOf(r.Run), &soak.Log{Windows: []soak.Window{{Agents: []soak.AgentWindow{{Agent: "a"}}}}}); err != nil {
		t.Fatalf("after migration: %v", err)
	}
	// Schema 3: a run from before branches has none; a new one is found
	// by its branch and tag.
	if rs, err := s.Runs(ctx, store.Filter{Rack: "mig"}); err != nil || len(rs) != 1 || rs[0].Branch != "" {
		t.Fatalf("migrated run: %+v, %v", rs, err)
	}
	r2 := Run("mig", 2, 1, 20000)
	r2.Run.GitBranch, r2.Run.GitTags = "main", []string{"v2"}
	if err := s.Put(ctx, r2, "latency"); err != nil {
		t.Fatalf("after migration: %v", err)
	}
	if rs, err := s.Runs(ctx, store.Filter{Rack: "mig", Branch: "main", Tag: "v2"}); err != nil || len(rs) != 1 || rs[0].Key.ID != "run-0002" {
		t.Fatalf("by branch and tag after migration: %+v, %v", rs, err)
	}
}
