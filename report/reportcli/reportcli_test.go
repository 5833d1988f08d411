package reportcli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/soak"
)

// saveResult writes r to path p as result.json is written, failing t if
// it cannot, and returns p.
func saveResult(t *testing.T, r *report.Result, p string) string {
	t.Helper()
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeResult(t *testing.T, dir, name string, p99Scale int64) string {
	t.Helper()
	r := report.NewResult(report.RunInfo{Rack: "sim", Start: time.Unix(0, 0).UTC(), End: time.Unix(60, 0).UTC()})
	h := report.NewHistogram()
	for k := int64(1); k <= 1000; k++ {
		v := 10_000 + k*10
		if k > 985 {
			v *= p99Scale
		}
		h.Record(v)
	}
	c := report.Case{Name: "shm 1KiB", Suite: "latency", Sent: 1000, Delivered: 1000, Histogram: h,
		Method: report.Method{Kind: report.RTTHalf, Clocks: "CLOCK_MONOTONIC"}}
	c.Finalize()
	r.Cases = []report.Case{c}
	return saveResult(t, r, filepath.Join(dir, name))
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	base := writeResult(t, dir, "base.json", 1)
	same := writeResult(t, dir, "same.json", 1)
	worse := writeResult(t, dir, "worse.json", 3)
	var out, errb bytes.Buffer
	if err := reportcli.Run(context.Background(), []string{"compare", base, same}, &out, &errb); err != nil {
		t.Errorf("same: %v", err)
	}
	out.Reset()
	err := reportcli.Run(context.Background(), []string{"compare", "--threshold", "10%", base, worse}, &out, &errb)
	if !errors.Is(err, report.ErrRegression) {
		t.Fatalf("planted regression: err = %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "REGRESSED") || !strings.Contains(out.String(), "latency/shm 1KiB") {
		t.Errorf("table:\n%s", out.String())
	}
	for _, bad := range [][]string{{"compare", base}, {"compare", "--threshold", "x", base, same}, {"frobnicate"}, {}} {
		if err := reportcli.Run(context.Background(), bad, &out, &errb); !errors.Is(err, reportcli.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", bad, err)
		}
	}
	if err := reportcli.Run(context.Background(), []string{"compare", base, filepath.Join(dir, "nope.json")}, &out, &errb); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("missing file: %v", err)
	}
}

func TestHTMLCommand(t *testing.T) {
	dir := t.TempDir()
	res := writeResult(t, dir, "run.json", 1)
	var out, errb bytes.Buffer
	if err := reportcli.Run(context.Background(), []string{"html", res}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.html"))
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("run.html: %v", err)
	}
	// A soak checkpoint renders directly (flags after the positional arg too).
	cp, err := soak.Create(filepath.Join(dir, "soak.jsonl"), soak.Header{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	cp.Append(&soak.Window{Start: time.Now(), End: time.Now().Add(time.Second), Agents: []soak.AgentWindow{{Agent: "a", RSSBytes: 1 << 20}}})
	cp.Close()
	outFile := filepath.Join(dir, "soak-out.html")
	if err := reportcli.Run(context.Background(), []string{"html", filepath.Join(dir, "soak.jsonl"), "-o", outFile}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(outFile); err != nil || !bytes.Contains(b, []byte(`id="soak"`)) {
		t.Errorf("soak html: %v", err)
	}
	// A newer schema is a clear error naming the file.
	newer := filepath.Join(dir, "newer.json")
	os.WriteFile(newer, []byte(`{"schema_version": 2}`), 0o644)
	if err := reportcli.Run(context.Background(), []string{"html", newer}, &out, &errb); !errors.Is(err, report.ErrSchemaVersion) || !strings.Contains(err.Error(), "newer.json") {
		t.Errorf("newer schema: %v", err)
	}
}

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]float64{"10%": 0.1, "10": 0.1, "0.05": 0.05, "2.5%": 0.025} {
		if got, err := reportcli.ParseThreshold(in); err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := reportcli.ParseThreshold("-1"); err == nil {
		t.Error("negative threshold accepted")
	}
}

// writePeerResult writes a result with hilrig and one peer on one row:
// hilrig's p50 about half the peer's.
func writePeerResult(t *testing.T, dir, name, peer string, peerBase int64) string {
	t.Helper()
	r := report.NewResult(report.RunInfo{Rack: "sim", ID: "run-" + name, Start: time.Unix(0, 0).UTC(), End: time.Unix(60, 0).UTC()})
	for _, mc := range []struct {
		mw   string
		base int64
	}{{"hilrig", 20_000}, {peer, peerBase}} {
		if mc.mw == "" {
			continue
		}
		h := report.NewHistogram()
		for k := int64(0); k < 1000; k++ {
			h.Record(mc.base + k*mc.base/1000)
		}
		c := report.Case{Name: mc.mw + " udp reliable 64B round trip", Suite: "latency", Middleware: kind.Middleware(mc.mw), Transport: "udp", PayloadBytes: 64,
			Reliability: "reliable", Subscribers: 1, Sent: 1000, Delivered: 1000, Histogram: h,
			Method: report.Method{Kind: report.RTTHalf, Clocks: "CLOCK_MONOTONIC of the pinging end (controller host)"},
			Route:  &report.Route{From: "controller host", To: "controller host", SameKernel: true, Class: report.ClassUDPOneHost}}
		if mc.mw != "hilrig" {
			c.Notes = []string{"peer: " + mc.mw + " 0.10.2, lo only"}
			c.Extra = map[report.ExtraKey]float64{report.ExtraDiscovery: 5e6}
		}
		c.Finalize()
		r.Cases = append(r.Cases, c)
	}
	return saveResult(t, r, filepath.Join(dir, name))
}

func TestCompareByMiddleware(t *testing.T) {
	dir := t.TempDir()
	one := writePeerResult(t, dir, "one.json", "cyclonedds", 40_000)
	var out, errb bytes.Buffer
	if err := reportcli.Run(context.Background(), []string{"compare", "--by", "middleware", one}, &out, &errb); err != nil {
		t.Fatalf("one result: %v", err)
	}
	for _, want := range []string{"latency · RTT/2 · UDP, one host · 64 B · max · reliable", "cyclonedds", "(base)", "0.50", "5.00ms", "cyclonedds: cyclonedds 0.10.2, lo only",
		// The answer first: the matrix, which cannot call one run.
		"P50: median over repetitions", "0.50 ?", "too few repetitions to call"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Across two results: hilrig from the first, a peer from the second.
	out.Reset()
	other := writePeerResult(t, dir, "other.json", "fastdds-udp", 10_000)
	if err := reportcli.Run(context.Background(), []string{"compare", one, "--by", "middleware", other}, &out, &errb); err != nil {
		t.Fatalf("two results: %v", err)
	}
	for _, want := range []string{"run 2: " + other, "fastdds-udp [run 2]", "cyclonedds [run 1]", "2.00", "across two runs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("two results: output lacks %q:\n%s", want, out.String())
		}
	}
	// No peer case: said so, not an error.
	out.Reset()
	plain := writeResult(t, dir, "plain.json", 1)
	if err := reportcli.Run(context.Background(), []string{"compare", "--by", "middleware", plain}, &out, &errb); err != nil || !strings.Contains(out.String(), "nothing to compare") {
		t.Errorf("no peers: %v %q", err, out.String())
	}
	for _, bad := range [][]string{{"compare", "--by", "middleware"}, {"compare", "--by", "middleware", one, one, one},
		{"compare", "--by", "board", one, one}, {"compare", "--by", "middleware", "--baseline", "last-pass", one}} {
		if err := reportcli.Run(context.Background(), bad, &out, &errb); !errors.Is(err, reportcli.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", bad, err)
		}
	}
	if err := reportcli.Run(context.Background(), []string{"compare", "--by", "middleware", filepath.Join(dir, "nope.json")}, &out, &errb); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestCompareByMiddlewareRepetitions: a result whose cell ran each
// middleware five times, interleaved, read back from its file: one line
// per middleware with the spread, and each ratio called.
func TestCompareByMiddlewareRepetitions(t *testing.T) {
	r := report.NewResult(report.RunInfo{Rack: "sim", ID: "reps"})
	bases := map[string][]int64{"hilrig": {20_000, 21_000, 19_000, 22_000, 20_500}, "cyclonedds": {40_000, 41_000, 39_000, 45_000, 42_000}}
	for k := 1; k <= 5; k++ {
		for _, mw := range []string{"hilrig", "cyclonedds"} {
			h := report.NewHistogram()
			for i := int64(0); i < 1000; i++ {
				h.Record(bases[mw][k-1] + i*bases[mw][k-1]/1000)
			}
			c := report.NewCase(&report.Route{From: "controller host", To: "controller host", SameKernel: true, Class: report.ClassUDPOneHost},
				report.CaseSpec{Suite: "latency", Name: report.RepName(mw+" udp reliable 64B round trip", k), Transport: "udp", Middleware: kind.Middleware(mw),
					PayloadBytes: 64, Reliability: "reliable", Subscribers: 1, Repetition: k, Method: report.Method{Kind: report.RTTHalf, Clocks: "c"}},
				report.Results{Sent: 1000, Delivered: 1000, Histogram: h})
			c.Finalize()
			r.Cases = append(r.Cases, *c)
		}
	}
	p := saveResult(t, r, filepath.Join(t.TempDir(), "reps.json"))
	var out, errb bytes.Buffer
	if err := reportcli.Run(context.Background(), []string{"compare", "--by", "middleware", p}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P99: median over repetitions", "hilrig faster", "5000", " [", "(rep"} {
		if want == "(rep" {
			if strings.Contains(out.String(), want) {
				t.Errorf("output names single repetitions instead of grouping them:\n%s", out.String())
			}
			continue
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n  cyclonedds "); n != 1 {
		t.Errorf("cyclonedds has %d detail lines, want 1 (five repetitions grouped):\n%s", n, out.String())
	}
}
