package scopes_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

func e(t int64, rising bool) scopes.Edge { return scopes.Edge{TimeNs: t, Rising: rising} }

func TestPairDelays(t *testing.T) {
	R, F := scopes.Rising, scopes.Falling
	for _, tc := range []struct {
		name     string
		src, dst []scopes.Edge
		sp, dp   scopes.Polarity
		limit    int
		want     []int64
	}{
		{"simple", []scopes.Edge{e(0, true), e(5, false), e(100, true)}, []scopes.Edge{e(10, true), e(15, false), e(130, true)}, R, R, 0, []int64{10, 30}},
		{"falling", []scopes.Edge{e(0, true), e(5, false)}, []scopes.Edge{e(10, true), e(17, false)}, F, F, 0, []int64{12}},
		{"rise to fall", []scopes.Edge{e(0, true)}, []scopes.Edge{e(10, true), e(17, false)}, R, F, 0, []int64{17}},
		{"dest before any source dropped", []scopes.Edge{e(50, true)}, []scopes.Edge{e(10, true), e(60, true)}, R, R, 0, []int64{10}},
		{"superseded source dropped", []scopes.Edge{e(0, true), e(20, true)}, []scopes.Edge{e(25, true)}, R, R, 0, []int64{5}},
		{"second dest without new source", []scopes.Edge{e(0, true)}, []scopes.Edge{e(10, true), e(20, true)}, R, R, 0, []int64{10}},
		{"population limit", []scopes.Edge{e(0, true), e(100, true), e(200, true)}, []scopes.Edge{e(1, true), e(102, true), e(203, true)}, R, R, 2, []int64{1, 2}},
		{"same instant counts", []scopes.Edge{e(5, true)}, []scopes.Edge{e(5, true)}, R, R, 0, []int64{0}},
		{"empty", nil, nil, R, R, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scopes.PairDelays(nil, tc.src, tc.dst, tc.sp, tc.dp, tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPairDelaysNoAllocs(t *testing.T) {
	src := []scopes.Edge{e(0, true), e(5, false), e(100, true), e(105, false)}
	dst := []scopes.Edge{e(10, true), e(15, false), e(120, true), e(125, false)}
	buf := make([]int64, 0, 8)
	if n := testing.AllocsPerRun(100, func() { buf = scopes.PairDelays(buf[:0], src, dst, scopes.Rising, scopes.Rising, 0) }); n != 0 {
		t.Fatalf("PairDelays allocates %v times per run with a caller-owned buffer", n)
	}
}

func TestStatsFromDelays(t *testing.T) {
	s := scopes.StatsFromDelays([]float64{1e-6, 2e-6, 3e-6, 4e-6})
	if !s.Mean.OK || math.Abs(s.Mean.V-2.5e-6) > 1e-18 || s.Min.V != 1e-6 || s.Max.V != 4e-6 || s.Count.N != 4 {
		t.Fatalf("%v", s)
	}
	if want := math.Sqrt(1.25) * 1e-6; math.Abs(s.StdDev.V-want) > 1e-15 {
		t.Fatalf("stddev %v, want population %v", s.StdDev.V, want)
	}
	z := scopes.StatsFromDelays(nil)
	if z.Mean.OK || !z.Count.OK || z.Count.N != 0 {
		t.Fatalf("empty: %v", z)
	}
	if m := z.Missing(); strings.Join(m, ",") != "mean,min,max,stddev" {
		t.Fatalf("Missing() = %v", m)
	}
}

func TestCrossValidate(t *testing.T) {
	sw := scopes.StatsFromDelays([]float64{10e-6, 12e-6, 14e-6})
	tol := scopes.Tolerance{AbsS: 500e-9, Rel: 0.01}

	t.Run("agree", func(t *testing.T) {
		sc := scopes.StatsFromDelays([]float64{10.1e-6, 12.1e-6, 14.1e-6})
		c := scopes.CrossValidate(sc, sw, tol)
		if !c.Agree {
			t.Fatalf("want agree: %s", c.Explanation)
		}
		if d := c.Rows[0].Diff; math.Abs(d-100e-9) > 1e-12 {
			t.Fatalf("mean diff %v, want +100ns (scope − software)", d)
		}
	})
	t.Run("software lies", func(t *testing.T) {
		sc := scopes.StatsFromDelays([]float64{5e-6, 7e-6, 9e-6}) // wire is 5 µs faster
		c := scopes.CrossValidate(sc, sw, tol)
		if c.Agree {
			t.Fatal("want disagreement")
		}
		if c.Rows[0].Diff >= 0 || !strings.Contains(c.Explanation, "mean") || !strings.Contains(c.Explanation, "less") {
			t.Fatalf("explanation should name the mean and the direction: %s", c.Explanation)
		}
	})
	t.Run("count mismatch", func(t *testing.T) {
		sc := scopes.StatsFromDelays([]float64{10e-6, 12e-6, 14e-6, 12e-6})
		c := scopes.CrossValidate(sc, sw, scopes.Tolerance{AbsS: 1e-3})
		if c.Agree || !strings.Contains(c.Explanation, "count") {
			t.Fatalf("count mismatch must disagree: %s", c.Explanation)
		}
	})
	t.Run("missing count is not compared", func(t *testing.T) {
		sc := scopes.StatsFromDelays([]float64{10e-6, 12e-6, 14e-6})
		sc.Count = scopes.Count{}
		c := scopes.CrossValidate(sc, sw, tol)
		if !c.Agree || c.Rows[4].Compared {
			t.Fatalf("missing count: %+v", c)
		}
	})
	t.Run("missing mean never agrees", func(t *testing.T) {
		c := scopes.CrossValidate(scopes.Stats{}, sw, tol)
		if c.Agree || !strings.Contains(c.Explanation, "cannot cross-validate") {
			t.Fatalf("%s", c.Explanation)
		}
	})
}

func TestDelayConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg   scopes.DelayConfig
		field string
	}{
		{scopes.DelayConfig{Source: 0, Dest: 2}, "Source"},
		{scopes.DelayConfig{Source: 1, Dest: 99}, "Dest"},
		{scopes.DelayConfig{Source: 2, Dest: 2}, "both"},
		{scopes.DelayConfig{Source: 1, Dest: 2, SourceEdge: 7}, "SourceEdge"},
		{scopes.DelayConfig{Source: 1, Dest: 2, HasThreshold: true, ThresholdV: math.NaN()}, "ThresholdV"},
		{scopes.DelayConfig{Source: 1, Dest: 2, PopulationLimit: -1}, "PopulationLimit"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, scopes.ErrBadConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v, want ErrBadConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := (scopes.DelayConfig{Source: 1, Dest: 2}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseIDN(t *testing.T) {
	id := scopes.ParseIDN(" TEKTRONIX,MSO54,C012345,CF:91.1CT FV:2.0\n")
	if id.Vendor != "TEKTRONIX" || id.Model != "MSO54" || id.Serial != "C012345" || id.Firmware != "CF:91.1CT FV:2.0" {
		t.Fatalf("%+v", id)
	}
	if short := scopes.ParseIDN("only"); short.Vendor != "only" || short.Model != "" {
		t.Fatalf("%+v", short)
	}
}

func TestInstrumentErrorIs(t *testing.T) {
	var err error = &scopes.InstrumentError{Code: -113, Text: "Undefined header"}
	if !errors.Is(err, scopes.ErrInstrument) || !strings.Contains(err.Error(), "Undefined header") {
		t.Fatal(err)
	}
}

func TestPolarityText(t *testing.T) {
	var p scopes.Polarity
	if err := p.UnmarshalText([]byte("Falling")); err != nil || p != scopes.Falling {
		t.Fatal(p, err)
	}
	if err := p.UnmarshalText([]byte("sideways")); !errors.Is(err, scopes.ErrBadConfig) {
		t.Fatal(err)
	}
}

// BenchmarkPairDelays pairs 10 000 marker pulses per channel into a
// caller-owned buffer.
func BenchmarkPairDelays(b *testing.B) {
	var src, dst []scopes.Edge
	for i := range int64(10_000) {
		src = append(src, e(i*1000, true), e(i*1000+100, false))
		dst = append(dst, e(i*1000+40, true), e(i*1000+140, false))
	}
	buf := make([]int64, 0, 10_000)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)+len(dst)) * 16)
	for b.Loop() {
		buf = scopes.PairDelays(buf[:0], src, dst, scopes.Rising, scopes.Rising, 0)
	}
	if len(buf) != 10_000 {
		b.Fatalf("%d delays", len(buf))
	}
}

func TestWindowAndCoverage(t *testing.T) {
	for w, want := range map[scopes.Window]string{
		{}:                                 "unknown (not reported by the instrument)",
		{Kind: scopes.WindowAll}:           "all acquisitions since the reset",
		{Kind: scopes.WindowFirst, N: 500}: "first 500 acquisitions after the reset",
		{Kind: scopes.WindowLast, N: 1000}: "last 1000 acquisitions",
	} {
		if got := w.String(); got != want {
			t.Errorf("%+v: %q, want %q", w, got, want)
		}
	}
	st := scopes.Stats{Mean: scopes.Some(1e-6), Count: scopes.Count{N: 1000, OK: true},
		Window: scopes.Window{Kind: scopes.WindowLast, N: 1000}, Snapshot: scopes.SnapshotFrozen}
	if got, want := st.Coverage(), "count 1000, window: last 1000 acquisitions, acquisition stopped while read"; got != want {
		t.Errorf("coverage %q, want %q", got, want)
	}
}

func TestCheckResult(t *testing.T) {
	if err := (scopes.Stats{Mean: scopes.Some(1e-6)}).CheckResult("q"); err != nil {
		t.Errorf("a mean without a count is a result: %v", err)
	}
	for _, st := range []scopes.Stats{
		{}, // no-result value for the mean
		{Mean: scopes.Some(1e-6), Count: scopes.Count{OK: true}}, // count 0
	} {
		if err := st.CheckResult("MEAN?"); !errors.Is(err, scopes.ErrNoResult) || !strings.Contains(err.Error(), "MEAN?") {
			t.Errorf("%v: %v, want ErrNoResult naming the query", st, err)
		}
	}
	st, err := scopes.CaptureStats(nil, 0, "capture")
	if !errors.Is(err, scopes.ErrNoResult) || st.Snapshot != scopes.SnapshotComputed {
		t.Errorf("empty capture: %v %v", st, err)
	}
	st, err = scopes.CaptureStats([]float64{1e-6}, 5, "capture")
	if err != nil || st.Window != (scopes.Window{Kind: scopes.WindowFirst, N: 5}) || st.Count.N != 1 {
		t.Errorf("capture of one delay: %v %v", st, err)
	}
}

// Each plausibility rule refuses what breaks it and names the field;
// rounding in the instrument's printed digits is not a violation.
func TestCheckPlausible(t *testing.T) {
	s, c := scopes.Some, func(n int64) scopes.Count { return scopes.Count{N: n, OK: true} }
	for _, tc := range []struct {
		name  string
		st    scopes.Stats
		field string // "" = plausible
	}{
		{"good", scopes.Stats{Mean: s(3e-6), Min: s(2e-6), Max: s(4e-6), StdDev: s(1e-6), Count: c(2)}, ""},
		{"rounded mean below min", scopes.Stats{Mean: s(1.2344e-6), Min: s(1.2345e-6), Max: s(1.2345e-6), Count: c(5)}, ""},
		{"one delay", scopes.Stats{Mean: s(5e-6), Min: s(5e-6), Max: s(5e-6), StdDev: s(0), Count: c(1)}, ""},
		{"missing figures", scopes.Stats{Mean: s(5e-6)}, ""},
		{"beyond span", scopes.Stats{Mean: s(49893.6), Min: s(49000), Max: s(51000)}, "mean"},
		{"min beyond span", scopes.Stats{Mean: s(1e-6), Min: s(-2), Max: s(1e-6)}, "min"},
		{"negative stddev", scopes.Stats{Mean: s(3e-6), Min: s(2e-6), Max: s(4e-6), StdDev: s(-1e-9)}, "stddev"},
		{"min above max", scopes.Stats{Mean: s(3e-6), Min: s(5e-6), Max: s(4e-6)}, "min"},
		{"mean below min", scopes.Stats{Mean: s(1e-6), Min: s(2e-6), Max: s(4e-6)}, "mean"},
		{"mean above max", scopes.Stats{Mean: s(5e-6), Min: s(2e-6), Max: s(4e-6)}, "mean"},
		{"count 1 spread", scopes.Stats{Mean: s(3e-6), Min: s(2e-6), Max: s(4e-6), Count: c(1)}, "count"},
		{"all zero", scopes.Stats{Mean: s(0), Min: s(0), Max: s(0), StdDev: s(0), Count: c(100)}, "mean"},
		{"negative count", scopes.Stats{Mean: s(1e-6), Count: c(-1)}, "count"},
	} {
		err := tc.st.CheckPlausible(1)
		var ie *scopes.ImplausibleError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want plausible", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, scopes.ErrImplausible)):
			t.Errorf("%s: %v, want a refusal of %s", tc.name, err, tc.field)
		}
	}
}

// The ResetWatch rules: a count going backwards, a count short of the
// earlier rate (Continuous only), extremes narrowing unless a full
// rolling window explains it.
func TestResetWatch(t *testing.T) {
	s, c := scopes.Some, func(n int64) scopes.Count { return scopes.Count{N: n, OK: true} }
	el := func(ms int) scopes.Elapsed {
		d := time.Duration(ms) * time.Millisecond
		return scopes.Elapsed{Min: d, Max: d, OK: true}
	}
	all := scopes.Window{Kind: scopes.WindowAll}
	last := scopes.Window{Kind: scopes.WindowLast, N: 100}
	for _, tc := range []struct {
		name       string
		continuous bool
		a, b       scopes.Stats
		reset      bool
	}{
		{"growing", true, scopes.Stats{Min: s(1e-6), Max: s(3e-6), Count: c(100), Window: all, Elapsed: el(100)},
			scopes.Stats{Min: s(1e-6), Max: s(4e-6), Count: c(200), Window: all, Elapsed: el(200)}, false},
		{"backwards", false, scopes.Stats{Count: c(100), Window: all}, scopes.Stats{Count: c(30), Window: all}, true},
		{"short", true, scopes.Stats{Count: c(1000), Window: all, Elapsed: el(1000)},
			scopes.Stats{Count: c(1100), Window: all, Elapsed: el(3000)}, true},
		{"short but not continuous", false, scopes.Stats{Count: c(1000), Window: all, Elapsed: el(1000)},
			scopes.Stats{Count: c(1100), Window: all, Elapsed: el(3000)}, false},
		{"min rose, no count", false, scopes.Stats{Min: s(1e-6), Max: s(3e-6)}, scopes.Stats{Min: s(2e-6), Max: s(3e-6)}, true},
		{"max fell", false, scopes.Stats{Min: s(1e-6), Max: s(3e-6), Count: c(5), Window: all},
			scopes.Stats{Min: s(1e-6), Max: s(2e-6), Count: c(6), Window: all}, true},
		{"full rolling window", true, scopes.Stats{Min: s(1e-6), Max: s(3e-6), Count: c(100), Window: last, Elapsed: el(100)},
			scopes.Stats{Min: s(2e-6), Max: s(2.5e-6), Count: c(100), Window: last, Elapsed: el(300)}, false},
	} {
		w := scopes.ResetWatch{Continuous: tc.continuous}
		if err := w.Observe(tc.a); err != nil {
			t.Fatalf("%s: first read: %v", tc.name, err)
		}
		err := w.Observe(tc.b)
		if got := errors.Is(err, scopes.ErrStatsReset); got != tc.reset {
			t.Errorf("%s: %v, want reset %v", tc.name, err, tc.reset)
		}
	}
}
