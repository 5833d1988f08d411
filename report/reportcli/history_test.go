package reportcli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/storetest"
)

// A report directory of 24 runs, p99 of case-01 up 50% from run 12 on:
// import loads every run, trend flags case-01's p99 at run 12 (and
// nothing else), writes the HTML page, and exits with a regression under
// --fail-on-regression; compare --baseline last-pass picks the previous
// passing run from the store.
func TestImportTrendBaseline(t *testing.T) {
	dir := t.TempDir()
	rd := filepath.Join(dir, "report")
	for i := range 24 {
		r := storetest.Run("sim", i, 3, 20000)
		r.Run.ID = "" // as written before run IDs: the directory names the run
		r.Run.GitBranch = "main"
		switch i {
		case 5:
			r.Run.GitTags = []string{"v1.0"}
		case 8, 9:
			r.Run.GitBranch = "release/1.x"
			if i == 9 {
				r.Run.GitTags = []string{"v1.1"}
			}
		case 14:
			r.Run.GitTags = []string{"v1.2"} // fails (see below): no passing run at v1.2
		}
		if i >= 12 {
			h := report.NewHistogram()
			for s := range int64(200) {
				v := int64(20000)
				if s >= 190 {
					v = 60000 + int64(i)
				}
				h.Record(v)
			}
			r.Cases[1].Histogram = h
			r.Cases[1].Finalize()
		}
		p := filepath.Join(rd, "runs", fmt.Sprintf("run-%04d", i), "result.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		saveResult(t, r, p)
	}
	o := reportcli.Options{ReportDir: rd, Version: "test"}
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := reportcli.RunWith(ctx, o, []string{"import", rd}, &out, &errb); err != nil {
		t.Fatalf("import: %v\n%s", err, errb.String())
	}
	if n := strings.Count(out.String(), "imported "); n != 24 || !strings.Contains(out.String(), "run sim/run-0007, 3 cases") {
		t.Fatalf("import output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(rd, "results.db")); err != nil {
		t.Fatalf("default store not under report_dir: %v", err)
	}

	out.Reset()
	html := filepath.Join(dir, "trend.html")
	err := reportcli.RunWith(ctx, o, []string{"trend", "--html", html, "--fail-on-regression", "--rack", "sim"}, &out, &errb)
	if !errors.Is(err, report.ErrRegression) {
		t.Fatalf("trend: err = %v, want a regression\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "latency/case-01") || !strings.Contains(s, "p99 REGRESSED") || !strings.Contains(s, "at run sim/run-0012") ||
		strings.Contains(s, "latency/case-00") || !strings.Contains(s, "2 regression(s) flagged") || !strings.Contains(s, "max REGRESSED") {
		t.Fatalf("trend output:\n%s", s)
	}
	b, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(b, []byte("sim/run-0012")) || bytes.Count(b, []byte("<svg")) != 3 {
		t.Fatalf("trend page: %v (%d plots)", err, bytes.Count(b, []byte("<svg")))
	}
	out.Reset()
	if err := reportcli.RunWith(ctx, o, []string{"trend", "--case", "case-00", "--all"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "latency/case-00") || strings.Contains(out.String(), "case-01") {
		t.Fatalf("--case filter:\n%s", out.String())
	}

	// compare --baseline: NEW is run 23; from run 12 on case-01's p99 is
	// over its bound (3×p50), so the last passing run is 11.
	out.Reset()
	newest := filepath.Join(rd, "runs", "run-0023", "result.json")
	if err := reportcli.RunWith(ctx, o, []string{"compare", "--baseline", "last-pass", newest}, &out, &errb); !errors.Is(err, report.ErrRegression) {
		t.Fatalf("compare vs last-pass: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "baseline: run sim/run-0011") {
		t.Fatalf("compare output:\n%s", out.String())
	}
	out.Reset()
	err = reportcli.RunWith(ctx, o, []string{"compare", "--baseline", "sim/run-0013", newest}, &out, &errb)
	if err != nil || !strings.Contains(out.String(), "baseline: run sim/run-0013") {
		t.Fatalf("compare vs run 3: %v\n%s", err, out.String())
	}
	// The last passing complete run of a branch or tag.
	for spec, want := range map[string]string{
		"branch:release/1.x": "baseline: run sim/run-0009 (rev 0abc009 on release/1.x tags v1.1,",
		"branch:main":        "baseline: run sim/run-0011 (rev 0abc00b on main,",
		"tag:v1.0":           "baseline: run sim/run-0005 (rev 0abc005 on main tags v1.0,",
	} {
		out.Reset()
		err := reportcli.RunWith(ctx, o, []string{"compare", "--baseline", spec, newest}, &out, &errb)
		if !errors.Is(err, report.ErrRegression) || !strings.Contains(out.String(), want) {
			t.Fatalf("compare --baseline %s: %v\n%s\nwant %q", spec, err, out.String(), want)
		}
	}
	// trend over a branch: only its 2 runs (8 and 9).
	out.Reset()
	if err := reportcli.RunWith(ctx, o, []string{"trend", "--branch", "release/1.x", "--all", "--case", "case-00"}, &out, &errb); err != nil {
		t.Fatalf("trend --branch: %v", err)
	}
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "latency/case-00 shm-loan 2 ") {
		t.Fatalf("trend --branch output:\n%s", out.String())
	}
	out.Reset()
	if err := reportcli.RunWith(ctx, o, []string{"trend", "--tag", "no-such-tag", "--all"}, &out, &errb); err != nil {
		t.Fatalf("trend --tag: %v", err)
	}
	if strings.Contains(out.String(), "latency/case-00") {
		t.Fatalf("trend --tag of an unknown tag listed cases:\n%s", out.String())
	}
	err = reportcli.RunWith(ctx, o, []string{"compare", "--baseline", "tag:v1.2", newest}, &out, &errb)
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "results.db") || !strings.Contains(err.Error(), "tag:v1.2") {
		t.Fatalf("tag with no passing run: %v", err)
	}
	if err := reportcli.RunWith(ctx, o, []string{"compare", "--baseline", "branch:", newest}, &out, &errb); !errors.Is(err, reportcli.ErrUsage) {
		t.Fatalf("empty branch: %v", err)
	}
	err = reportcli.RunWith(ctx, o, []string{"compare", "--baseline", "sim/nope", newest}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "results.db") {
		t.Fatalf("missing baseline: %v", err)
	}
	if err := reportcli.RunWith(ctx, o, []string{"trend", "--since", "yesterday-ish"}, &out, &errb); !errors.Is(err, reportcli.ErrUsage) {
		t.Fatalf("bad --since: %v", err)
	}
}

// import of a file that is not a result names the file and imports the rest.
func TestImportBadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := storetest.Run("sim", 1, 1, 1000).WriteFile(good); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	var out, errb bytes.Buffer
	err := reportcli.RunWith(context.Background(), reportcli.Options{ReportDir: dir}, []string{"import", bad, good}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "1 of 2") || !strings.Contains(errb.String(), "bad.json") || !strings.Contains(out.String(), "good.json") {
		t.Fatalf("err %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
}
