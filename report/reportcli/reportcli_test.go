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

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/soak"
)

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
	p := filepath.Join(dir, name)
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
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
