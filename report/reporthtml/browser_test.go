package reporthtml_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/trend"
)

// chromiumDOM loads page in headless Chromium and returns the DOM as
// rendered and the browser's log (console messages are logged there).
func chromiumDOM(t *testing.T, page string) (*html.Node, string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (Debian package chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+page)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	root, err := html.Parse(&out)
	if err != nil {
		t.Fatal(err)
	}
	return root, errb.String()
}

func noConsoleErrors(t *testing.T, log string) {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") {
			t.Errorf("browser console: %s", l)
		}
	}
}

// nonEmptySVG reports whether n holds an <svg> with drawn content.
func nonEmptySVG(n *html.Node) bool {
	ok := false
	walk(n, func(x *html.Node) {
		if x.Type == html.ElementNode && x.Data == "svg" && len(elems(x, "path")) > 3 {
			ok = true
		}
	})
	return ok
}

// The report's first screen, as a browser renders it: the verdict, the
// failing case first in "worst first", suites collapsible, every case's
// plots drawn, and no console error.
func TestReportInChromium(t *testing.T) {
	r := fixedResult()
	r.Cases[0].Bounds.P99 = 200 * time.Microsecond // shm passes, at some fraction of its bound
	r.Cases[0].Finalize()
	r.Cases[1].Lost = 3 // udp fails max_lost 0
	r.Cases[1].Finalize()
	if r.Cases[0].Verdict != report.Pass || r.Cases[1].Verdict != report.Fail {
		t.Fatalf("fixture verdicts %s %s", r.Cases[0].Verdict, r.Cases[1].Verdict)
	}
	page := filepath.Join(t.TempDir(), "index.html")
	var b bytes.Buffer
	if err := reporthtml.Render(&b, reporthtml.Input{Title: "t", Result: r}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root, log := chromiumDOM(t, page)
	noConsoleErrors(t, log)
	if v := text(byID(root, "verdict-line")); !strings.HasPrefix(v, "FAILED: 1 of 2") {
		t.Errorf("verdict line %q", v)
	}
	rows := elems(byID(root, "worst-table"), "tr")
	if len(rows) != 3 || !strings.Contains(text(rows[1]), "udp 1KiB <b>") || !strings.Contains(text(rows[1]), "lost") ||
		!strings.Contains(text(rows[2]), "of bound") {
		t.Errorf("worst-first rows: %d, first %q", len(rows), text(rows[1]))
	}
	ds := elems(byID(root, "first-screen"), "details")
	if len(ds) != 1 || attr(ds[0], "open") == "" && !hasAttr(ds[0], "open") {
		t.Errorf("suite groups: %d, want 1 open (it has a failure)", len(ds))
	}
	for _, id := range []string{"case-0", "case-1"} {
		if !nonEmptySVG(byID(root, id)) {
			t.Errorf("%s: no plot rendered", id)
		}
	}
}

// The middleware comparison as a browser renders it: every row's table
// and its CDF chart drawn with a curve per middleware, no console error.
func TestMiddlewaresInChromium(t *testing.T) {
	page := filepath.Join(t.TempDir(), "peers.html")
	var b bytes.Buffer
	if err := reporthtml.Render(&b, reporthtml.Input{Title: "peers", Result: peerResult()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root, log := chromiumDOM(t, page)
	noConsoleErrors(t, log)
	checkMiddlewareSection(t, root)
}

func hasAttr(n *html.Node, k string) bool {
	for _, a := range n.Attr {
		if a.Key == k {
			return true
		}
	}
	return false
}

// The trend page in a browser: summary, the regressed case first, every
// plot drawn, no console error.
func TestTrendInChromium(t *testing.T) {
	var pts []store.Point
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"a", "b"} {
		for i := range 30 {
			p99 := int64(100000 + i%4)
			if name == "b" && i >= 15 {
				p99 = 150000 + int64(i%4)
			}
			pts = append(pts, store.Point{Run: store.RunKey{Rack: "sim", ID: "r" + string(rune('a'+i%26))}, Start: t0.Add(time.Duration(i) * time.Hour),
				Suite: "latency", Name: name, P50: 50000, P99: p99, Max: 200000 + int64(i%5), Sent: 100, Revision: "rev"})
		}
	}
	ss, err := trend.Build(pts, trend.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "trend.html")
	var b bytes.Buffer
	if err := reporthtml.RenderTrend(&b, reporthtml.TrendInput{Title: "trend", Series: ss, Params: trend.DefaultParams}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(page, b.Bytes(), 0o644)
	root, log := chromiumDOM(t, page)
	noConsoleErrors(t, log)
	if s := text(byID(root, "trend-summary")); !strings.Contains(s, "2 case(s), 1 regression(s)") {
		t.Errorf("summary %q", s)
	}
	var secs []*html.Node
	walk(root, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "section" {
			secs = append(secs, n)
		}
	})
	if len(secs) != 2 || !strings.Contains(text(secs[0]), "latency/b") || !strings.Contains(text(secs[0]), "regression") {
		t.Fatalf("sections: %d", len(secs))
	}
	for _, s := range secs {
		if !nonEmptySVG(s) {
			t.Errorf("%s: empty plot", attr(s, "id"))
		}
	}
}
