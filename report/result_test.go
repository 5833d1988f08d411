package report_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
)

// fixedResult is a small but complete result used by several tests.
func fixedResult() *report.Result {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	r := report.NewResult(report.RunInfo{
		Machine: "rack-a-ctl", Kernel: "6.12.0-rt", CPUModel: "Cortex-A76", CPUGovernor: "performance",
		OnlineCPUs: "0-3", NumCPU: 4, Rack: "sim", GitRevision: "abc123", Version: "v0.1.0",
		Config: "rack: sim\n", Start: t0, End: t0.Add(2 * time.Minute),
	})
	mk := func(name, transport string, base int64, lost int64, b report.Bounds) report.Case {
		h := report.NewHistogram()
		for i := int64(0); i < 2000; i++ {
			h.Record(base + (i%100)*base/100 + (i/1990)*base*5) // 10 samples in the tail
		}
		c := report.Case{
			Name: name, Suite: "latency", Labels: []string{"latency"}, Transport: transport,
			PayloadBytes: 1024, RateHz: 1000, Reliability: "reliable", Subscribers: 1,
			Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC (same host)", UncertaintyNs: 50},
			Sent:   2000 + lost, Delivered: 2000, Lost: lost, Histogram: h,
			CPUPercent: 12.5, RSSBytes: 20 << 20, ThroughputMBps: 1.024, MsgsPerSec: 1000,
			Bounds: &b,
		}
		return c
	}
	r.Cases = append(r.Cases,
		mk("shm-copy 1KiB 1kHz", "shm-copy", 20_000, 0, report.Bounds{P99: time.Millisecond, Max: 10 * time.Millisecond, MaxLost: report.Loss(0)}),
		mk("udp 1KiB 1kHz", "udp", 80_000, 3, report.Bounds{P99: 50 * time.Microsecond, MaxLost: report.Loss(0)}),
	)
	sc := &r.Cases[0]
	sc.Scope = &report.ScopeComparison{Instrument: "SIM,SCOPE,0,1", Channels: "CH1→CH2",
		Scope: report.ScopeStats{MeanNs: report.F(26_000), MinNs: report.F(20_100), MaxNs: report.F(121_000)}}
	sc.Bounds.ScopeTolerance = 10 * time.Microsecond
	for i := range r.Cases {
		r.Cases[i].Finalize()
	}
	return r
}

func TestJudgeVerdicts(t *testing.T) {
	r := fixedResult()
	if got := r.Cases[0].Verdict; got != report.Pass {
		t.Errorf("case 0 verdict %s, checks %v", got, r.Cases[0].Checks)
	}
	c1 := r.Cases[1]
	if c1.Verdict != report.Fail {
		t.Fatalf("case 1 verdict %s, want fail (p99 over, 3 lost)", c1.Verdict)
	}
	failed := map[string]bool{}
	for _, ck := range c1.Checks {
		if ck.Verdict == report.Fail {
			failed[ck.Bound] = true
		}
	}
	if !failed["p99"] || !failed["lost"] || len(failed) != 2 {
		t.Errorf("failed checks %v, want p99 and lost", failed)
	}
	if r.Verdict() != report.Fail {
		t.Errorf("overall %s", r.Verdict())
	}
	sc := r.Cases[0].Scope
	if sc.DifferenceNs == nil || !sc.Agree || sc.Scope.StdDevNs != nil {
		t.Errorf("scope comparison %+v", sc)
	}
	// An empty case with a latency bound fails rather than passing silently.
	empty := report.Case{Name: "x", Bounds: &report.Bounds{P99: time.Second}}
	empty.Finalize()
	if empty.Verdict != report.Fail || empty.Checks[0].Note != "no samples" {
		t.Errorf("empty case: %s %+v", empty.Verdict, empty.Checks)
	}
	nb := report.Case{Name: "y"}
	nb.Finalize()
	if nb.Verdict != report.NoBounds {
		t.Errorf("unbounded case verdict %s", nb.Verdict)
	}
}

func TestResultRoundTrip(t *testing.T) {
	r := fixedResult()
	path := filepath.Join(t.TempDir(), "result.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Run.Start.Equal(r.Run.Start) {
		t.Errorf("start %v != %v", back.Run.Start, r.Run.Start)
	}
	back.Run.Start, back.Run.End = r.Run.Start, r.Run.End
	for i := range r.Cases {
		a, b := r.Cases[i], back.Cases[i]
		if a.Histogram.Summary() != b.Histogram.Summary() {
			t.Errorf("case %d histogram differs after round trip", i)
		}
		a.Histogram, b.Histogram = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Errorf("case %d differs after round trip:\n%+v\n%+v", i, a, b)
		}
	}
	if !reflect.DeepEqual(r.Run, back.Run) {
		t.Errorf("run info differs:\n%+v\n%+v", r.Run, back.Run)
	}
}

func TestResultSchemaVersionCheck(t *testing.T) {
	cases := []struct {
		name, json string
		want       error
		mention    []string
	}{
		{"newer", `{"schema_version": 99, "cases": []}`, report.ErrSchemaVersion, []string{"f.json", "99"}},
		{"zero", `{"schema_version": 0}`, report.ErrSchemaVersion, []string{"f.json", "0"}},
		{"missing", `{"cases": []}`, report.ErrSchemaVersion, []string{"f.json", "no schema_version"}},
		{"syntax", "{\n\"schema_version\": 1,\n  \"cases\": [}", report.ErrBadResult, []string{"f.json", "line 3"}},
		{"type", "{\"schema_version\": 1, \"cases\": [{\"name\": 5}]}", report.ErrBadResult, []string{"f.json", "line 1"}},
		{"unnamed case", `{"schema_version": 1, "cases": [{}]}`, report.ErrBadResult, []string{"cases[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.Decode([]byte(tc.json), "f.json")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestMethodString(t *testing.T) {
	m := report.Method{Kind: report.RTTHalf, Clocks: "CLOCK_MONOTONIC"}
	if got := m.String(); got != "RTT/2, CLOCK_MONOTONIC, uncertainty not quantified" {
		t.Errorf("got %q", got)
	}
	m = report.Method{Kind: report.OneWay, Clocks: "PHC", UncertaintyNs: 1500}
	if got := m.String(); got != "one-way, PHC, ±1.50µs" {
		t.Errorf("got %q", got)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"cases":[{"name":"a","summary":{"count":1}}]}`))
	f.Add([]byte(`{"schema_version":1,"cases":[{"name":"a","histogram":"HISTFAAAACR4nJNpmSzMwMDAwQABzFCaEUzOmNZgD2EBAEbXBJc="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := report.Decode(b, "fuzz.json")
		if err != nil {
			return
		}
		for i := range r.Cases {
			r.Cases[i].Finalize()
			_ = r.Cases[i].DistributionLine()
		}
	})
}

// TestFinalizeKeepsCallerChecks: checks judged by the caller (e.g. soak
// verdicts) survive Finalize next to the bound checks, decide the verdict,
// and a second Finalize re-judges the bound checks instead of doubling them.
func TestFinalizeKeepsCallerChecks(t *testing.T) {
	lost := int64(0)
	tests := []struct {
		name   string
		bounds *report.Bounds
		caller []report.Check
		want   report.Verdict
		checks int
	}{
		{"no bounds, no checks", nil, nil, report.NoBounds, 0},
		{"caller pass only", nil, []report.Check{{Bound: "trend rss", Verdict: report.Pass}}, report.Pass, 1},
		{"caller fail only", nil, []report.Check{{Bound: "trend rss", Verdict: report.Fail}}, report.Fail, 1},
		{"bound pass, caller fail", &report.Bounds{MaxLost: &lost}, []report.Check{{Bound: "trend p99", Verdict: report.Fail}}, report.Fail, 2},
		{"bound pass, caller pass", &report.Bounds{MaxLost: &lost}, []report.Check{{Bound: "trend p99", Verdict: report.Pass}}, report.Pass, 2},
		// a caller check named like a bound check is the bound's to judge
		{"same name as a bound", &report.Bounds{MaxLost: &lost}, []report.Check{{Bound: "lost", Verdict: report.Fail}}, report.Pass, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := report.Case{Name: "c", Sent: 10, Delivered: 10, Bounds: tt.bounds, Checks: append([]report.Check(nil), tt.caller...)}
			for i := range 2 {
				c.Finalize()
				if c.Verdict != tt.want || len(c.Checks) != tt.checks {
					t.Errorf("Finalize #%d: verdict %s, %d checks %+v; want %s, %d", i+1, c.Verdict, len(c.Checks), c.Checks, tt.want, tt.checks)
				}
			}
		})
	}
}
