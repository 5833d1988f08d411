package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
)

// TestReportCompareExitCode checks the exit-code path: a planted regression
// exits 3, identical results 0, a usage mistake 2.
func TestReportCompareExitCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, scale int64) string {
		r := report.NewResult(report.RunInfo{Start: time.Unix(0, 0).UTC()})
		h := report.NewHistogram()
		for k := int64(1); k <= 100; k++ {
			h.Record(k * 1000 * scale)
		}
		c := report.Case{Name: "c", Suite: "s", Sent: 100, Delivered: 100, Histogram: h}
		c.Finalize()
		r.Cases = []report.Case{c}
		p := filepath.Join(dir, name)
		if err := r.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base, worse := write("base.json", 1), write("worse.json", 2)
	var out, errb bytes.Buffer
	if code := run([]string{"report", "compare", base, worse}, &out, &errb); code != 3 {
		t.Errorf("regression exit %d, want 3; stderr %s", code, errb.String())
	}
	if code := run([]string{"report", "compare", base, base}, &out, &errb); code != 0 {
		t.Errorf("same exit %d, want 0; stderr %s", code, errb.String())
	}
	if code := run([]string{"report", "compare", base}, &out, &errb); code != 2 {
		t.Errorf("usage exit %d, want 2", code)
	}
}

// TestReportCompareByMiddleware runs the middleware comparison through the
// binary's dispatcher: the rows print and the exit status is 0 (a
// comparison of middlewares is not a verdict); a bad --by exits 2.
func TestReportCompareByMiddleware(t *testing.T) {
	r := report.NewResult(report.RunInfo{Start: time.Unix(0, 0).UTC()})
	for _, mc := range []struct {
		mw    string
		scale int64
	}{{"hilrig", 1}, {"iceoryx", 2}} {
		h := report.NewHistogram()
		for k := int64(1); k <= 100; k++ {
			h.Record(k * 1000 * mc.scale)
		}
		c := report.Case{Name: mc.mw + " shm-copy reliable 64B @ 1000 Hz one-way", Suite: "latency", Middleware: kind.Middleware(mc.mw), Transport: "shm-copy",
			PayloadBytes: 64, RateHz: 1000, Sent: 100, Delivered: 100, Histogram: h, Method: report.Method{Kind: report.OneWay}}
		c.Finalize()
		r.Cases = append(r.Cases, c)
	}
	p := filepath.Join(t.TempDir(), "peers.json")
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"report", "compare", "--by", "middleware", p}, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "shared memory · 64 B · 1000 Hz") || !strings.Contains(s, "iceoryx") || !strings.Contains(s, "0.50") {
		t.Errorf("output:\n%s", s)
	}
	if code := run([]string{"report", "compare", "--by", "nothing", p}, &out, &errb); code != 2 {
		t.Errorf("--by nothing: exit %d, want 2", code)
	}
}
