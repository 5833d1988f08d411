package reporthtml_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/soak"
)

func fixedResult() *report.Result {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	r := report.NewResult(report.RunInfo{Machine: "ctl", Kernel: "6.12", Rack: "sim", GitRevision: "abc", Version: "v0.1",
		Config: "rack: sim <&>\n", Start: t0, End: t0.Add(time.Minute)})
	for i, name := range []string{"shm 1KiB", "udp 1KiB <b>"} {
		h := report.NewHistogram()
		for k := int64(0); k < 5000; k++ {
			h.Record(int64(i+1)*20_000 + k*k%90_000)
		}
		c := report.Case{Name: name, Suite: "latency", Transport: "shm", PayloadBytes: 1024, RateHz: 1000,
			Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC", UncertaintyNs: 40},
			Sent:   5000, Delivered: 5000, Histogram: h, Bounds: &report.Bounds{P99: 100 * time.Microsecond, MaxLost: report.Loss(0)}}
		if i == 0 {
			c.Scope = &report.ScopeComparison{Instrument: "SIM", Scope: report.ScopeStats{MeanNs: report.F(70_000), MaxNs: report.F(130_000)}, ToleranceNs: 20_000}
		}
		c.Finalize()
		r.Cases = append(r.Cases, c)
	}
	return r
}

// doc parses the page and returns the root.
func doc(t *testing.T, b []byte) *html.Node {
	t.Helper()
	n, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse html: %v", err)
	}
	return n
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

func byID(root *html.Node, id string) *html.Node {
	var found *html.Node
	walk(root, func(n *html.Node) {
		if found == nil && n.Type == html.ElementNode && attr(n, "id") == id {
			found = n
		}
	})
	return found
}

func elems(root *html.Node, tag string) []*html.Node {
	var out []*html.Node
	walk(root, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
	})
	return out
}

// render renders a node back to markup (for the SVG XML check).
func render(t *testing.T, n *html.Node) []byte {
	var b bytes.Buffer
	if err := html.Render(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderResult(t *testing.T) {
	var out bytes.Buffer
	if err := reporthtml.Render(&out, reporthtml.Input{Result: fixedResult()}); err != nil {
		t.Fatal(err)
	}
	root := doc(t, out.Bytes())

	// Summary table: one row per case, with the verdict and the p99 cell.
	tbl := byID(root, "summary-table")
	if tbl == nil {
		t.Fatal("no summary table")
	}
	rows := elems(elems(tbl, "tbody")[0], "tr")
	if len(rows) != 2 {
		t.Fatalf("summary rows = %d, want 2", len(rows))
	}
	cells := elems(rows[1], "td")
	if got := text(cells[0]); got != "udp 1KiB <b>" {
		t.Errorf("case name cell %q (must be escaped text, not markup)", got)
	}
	last := cells[len(cells)-1]
	if text(last) != "fail" || !strings.Contains(attr(last, "class"), "fail") {
		t.Errorf("verdict cell %q class %q, want fail", text(last), attr(last, "class"))
	}
	var badCells int
	for _, c := range cells {
		if attr(c, "class") == "bad" {
			badCells++
		}
	}
	if badCells != 1 {
		t.Errorf("highlighted cells in failing row = %d, want 1 (p99)", badCells)
	}
	if text(byID(root, "overall-verdict")) != "fail" {
		t.Errorf("overall verdict %q", text(byID(root, "overall-verdict")))
	}

	// Per case: a histogram and a CDF as inline SVG with drawn paths.
	for _, id := range []string{"case-0", "case-1"} {
		c := byID(root, id)
		if c == nil {
			t.Fatalf("no section %s", id)
		}
		svgs := elems(c, "svg")
		if len(svgs) != 2 {
			t.Fatalf("%s: %d svg, want 2 (histogram, CDF)", id, len(svgs))
		}
		all := text(c)
		for _, want := range []string{"Latency histogram", "Cumulative distribution", "99%", "one-way"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s lacks %q", id, want)
			}
		}
		for _, s := range svgs {
			if len(elems(s, "path")) < 5 {
				t.Errorf("%s: svg has too few paths", id)
			}
			// The inline SVG is well-formed XML.
			d := xml.NewDecoder(bytes.NewReader(render(t, s)))
			for {
				if _, err := d.Token(); err != nil {
					if err.Error() != "EOF" {
						t.Errorf("%s: svg not well-formed: %v", id, err)
					}
					break
				}
			}
		}
	}
	// Scope table: the missing statistics are marked as missing.
	st := byID(root, "scope-table")
	if st == nil || !strings.Contains(text(st), "missing") || !strings.Contains(text(st), "70.0µs") {
		t.Errorf("scope table: %q", text(st))
	}
	if env := byID(root, "env-table"); env == nil || !strings.Contains(text(env), "6.12") {
		t.Error("environment table missing kernel")
	}
	// Self-contained: nothing to fetch.
	walk(root, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		for _, k := range []string{"src", "href"} {
			v := attr(n, k)
			if n.Data == "a" && k == "href" && v != "" && !strings.Contains(v, ":") && !strings.HasPrefix(v, "/") {
				continue // a link to a file beside the report (trace JSON) is followed only on click
			}
			if v != "" && !strings.HasPrefix(v, "#") {
				t.Errorf("<%s %s=%q> fetches something", n.Data, k, v)
			}
		}
		if n.Data == "script" || n.Data == "link" {
			t.Errorf("<%s> element present", n.Data)
		}
	})
}

func TestRenderPartialSoak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	cp, err := soak.Create(path, soak.Header{Name: "smoke", Started: t0, Window: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		h := report.NewHistogram()
		for k := int64(0); k < 100; k++ {
			h.Record(10_000 + k*100)
		}
		st := t0.Add(time.Duration(i) * 10 * time.Second)
		w := &soak.Window{Start: st, End: st.Add(10 * time.Second), Agents: []soak.AgentWindow{{Agent: "b1", RSSBytes: 30 << 20,
			PTP:     &soak.PTPSample{Locked: i != 7, OffsetNs: int64(i%5) * 10},
			Streams: []soak.StreamWindow{{Stream: "imu", Sent: 100, Delivered: 100, Histogram: h}}}}}
		if i == 12 {
			w.Agents[0].Events = []soak.Event{{Time: st.Add(time.Second), Kind: soak.EventRestart, Target: "sub", Recovered: true, RecoveryNs: 5e6}}
		}
		if i == 20 {
			w.Fault = &soak.Fault{Board: "b1", Cause: "board b1 sent no agent window for 30s", From: st, To: st.Add(8 * time.Second),
				Recovery: "power-cycled (recovery 1 of 2)", Console: "[panic] Kernel panic - not syncing: sysrq triggered crash"}
		}
		if err := cp.Append(w); err != nil {
			t.Fatal(err)
		}
	}
	cp.Close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"kind":"window","wind`) // killed mid-line
	f.Close()
	lg, err := soak.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := reporthtml.Render(&out, reporthtml.Input{Soak: lg}); err != nil {
		t.Fatal(err)
	}
	root := doc(t, out.Bytes())
	s := byID(root, "soak")
	if s == nil {
		t.Fatal("no soak section")
	}
	svgs := elems(root, "svg")
	if len(svgs) != 3 { // latency per stream, RSS, PTP offset
		t.Errorf("soak svgs = %d, want 3", len(svgs))
	}
	all := text(root)
	for _, want := range []string{"Latency per window: b1/imu", "RSS per agent", "PTP offset from master", "torn tail", "30 window(s)"} {
		if !strings.Contains(all, want) {
			t.Errorf("soak page lacks %q", want)
		}
	}
	if ev := byID(root, "soak-events"); ev == nil || len(elems(ev, "tr")) != 2 {
		t.Error("events table should have a header and one restart row")
	}
	fw := byID(root, "soak-faults")
	if fw == nil || len(elems(fw, "tr")) != 2 || !strings.Contains(text(fw), "Kernel panic") || !strings.Contains(text(fw), "board b1 sent no agent window") {
		t.Error("fault-window table should have a header and one row with the cause and the console tail")
	}
	if !strings.Contains(all, "Fault windows (board outages): 1") {
		t.Error("soak summary does not count the fault window")
	}
}
