package reporthtml_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
)

// peerResult is a latency run with hilrig and two peers on one shm row
// and one UDP row (as the latency suite's comparison writes them), plus a
// hilrig-only case that makes no row.
func peerResult() *report.Result {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	r := report.NewResult(report.RunInfo{Rack: "sim", Start: t0, End: t0.Add(time.Minute)})
	add := func(name, mw, transport string, base int64) {
		h := report.NewHistogram()
		for k := int64(0); k < 3000; k++ {
			h.Record(base + k*k%(4*base))
		}
		c := report.Case{Name: name, Suite: "latency", Middleware: kind.Middleware(mw), Transport: transport, PayloadBytes: 64, RateHz: 1000,
			Reliability: "reliable", Subscribers: 1, Sent: 3000, Delivered: 3000, Histogram: h, CPUPercent: 5, RSSBytes: 30 << 20,
			Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC of one kernel (board-b → board-c on the same host)"},
			Notes:  []string{"publisher on board-b, subscriber(s) on board-c"}}
		// The route as the rig decides it (rig.RouteOf): two namespaces of
		// one kernel.
		c.Route = &report.Route{From: "board-b", To: "board-c", SameKernel: true, Class: report.ClassUDPOneHost}
		if strings.HasPrefix(transport, "shm") {
			c.Route.Class = report.ClassSharedMemory
		}
		if mw != "hilrig" {
			c.Notes = append(c.Notes, "peer: "+mw+" <v1> on lo")
			c.Extra = map[report.ExtraKey]float64{report.ExtraDiscovery: 3e6}
		}
		c.Finalize()
		r.Cases = append(r.Cases, c)
	}
	add("hilrig shm-copy reliable 64B @ 1000 Hz one-way", "hilrig", "shm-copy", 20_000)
	add("iceoryx shm-copy reliable 64B @ 1000 Hz one-way", "iceoryx", "shm-copy", 15_000)
	add("hilrig udp reliable 64B @ 1000 Hz one-way", "hilrig", "udp", 40_000)
	add("cyclonedds udp reliable 64B @ 1000 Hz one-way", "cyclonedds", "udp", 90_000)
	add("fastdds-udp udp reliable 64B @ 1000 Hz one-way", "fastdds-udp", "udp", 150_000)
	add("shm-loan reliable 64B @ 1000 Hz one-way", "hilrig", "shm-loan", 10_000)
	r.Cases[len(r.Cases)-1].PayloadBytes = 4096 // hilrig alone: no row
	return r
}

// mwRows returns the comparison's row sections.
func mwRows(root *html.Node) []*html.Node {
	var out []*html.Node
	walk(root, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "section" && attr(n, "class") == "mw-row" {
			out = append(out, n)
		}
	})
	return out
}

// checkMiddlewareSection asserts the comparison as rendered: two rows,
// hilrig first and marked as base, the peers' ratios, configuration
// lines escaped, and one CDF per row with a curve and a legend entry per
// middleware.
func checkMiddlewareSection(t *testing.T, root *html.Node) {
	t.Helper()
	if byID(root, "middlewares") == nil {
		t.Fatal("no middleware comparison section")
	}
	rows := mwRows(root)
	if len(rows) != 2 {
		t.Fatalf("%d comparison rows, want 2 (shm 64 B, UDP 64 B)", len(rows))
	}
	for i, want := range []struct {
		title string
		mws   []string
	}{
		{"latency · one-way · shared memory · 64 B · 1000 Hz · reliable", []string{"hilrig", "iceoryx"}},
		{"latency · one-way · UDP, one host · 64 B · 1000 Hz · reliable", []string{"hilrig", "cyclonedds", "fastdds-udp"}},
	} {
		sec := rows[i]
		if h := text(elems(sec, "h3")[0]); h != want.title {
			t.Errorf("row %d title %q, want %q", i, h, want.title)
		}
		trs := elems(elems(sec, "tbody")[0], "tr")
		if len(trs) != len(want.mws) {
			t.Fatalf("row %d: %d middlewares, want %v", i, len(trs), want.mws)
		}
		for j, mw := range want.mws {
			cells := elems(trs[j], "td")
			if text(cells[0]) != mw {
				t.Errorf("row %d entry %d %q, want %s", i, j, text(cells[0]), mw)
			}
			switch {
			case j == 0 && (attr(trs[j], "class") != "mw-base" || text(cells[len(cells)-1]) != "base"):
				t.Errorf("row %d: hilrig not marked as the base", i)
			case j > 0 && (len(cells) != 17 || text(cells[10]) == "" || text(cells[9]) != "3.00ms"):
				t.Errorf("row %d %s: %d cells, ratio p50 %q, discovery %q", i, mw, len(cells), text(cells[10]), text(cells[9]))
			}
		}
		cdf := elems(sec, "svg")
		if len(cdf) != 1 || !nonEmptySVG(sec) {
			t.Fatalf("row %d: %d CDF charts, want 1 drawn", i, len(cdf))
		}
		for _, mw := range want.mws {
			if !strings.Contains(text(cdf[0]), mw) {
				t.Errorf("row %d: CDF legend lacks %s: %q", i, mw, text(cdf[0]))
			}
		}
	}
	if cfg := text(rows[1]); !strings.Contains(cfg, "cyclonedds: cyclonedds <v1> on lo") {
		t.Errorf("configuration lines: %q", cfg)
	}
}

func TestRenderMiddlewares(t *testing.T) {
	var out bytes.Buffer
	if err := reporthtml.Render(&out, reporthtml.Input{Result: peerResult()}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("<v1>")) {
		t.Error("a configuration note reached the page unescaped")
	}
	checkMiddlewareSection(t, doc(t, out.Bytes()))

	// A run without peers has no comparison section.
	out.Reset()
	if err := reporthtml.Render(&out, reporthtml.Input{Result: fixedResult()}); err != nil {
		t.Fatal(err)
	}
	if byID(doc(t, out.Bytes()), "middlewares") != nil {
		t.Error("comparison section rendered for a run without peer cases")
	}
}

// repeatedResult is one shm cell run five times per middleware,
// interleaved: iceoryx clearly slower than hilrig, cyclonedds overlapping
// it run for run.
func repeatedResult() *report.Result {
	r := report.NewResult(report.RunInfo{Rack: "sim"})
	bases := map[string][]int64{
		"hilrig":     {20_000, 21_000, 19_000, 22_000, 20_500},
		"iceoryx":    {40_000, 41_000, 39_000, 45_000, 42_000},
		"cyclonedds": {19_500, 23_000, 21_000, 21_500, 18_000},
	}
	for k := 1; k <= 5; k++ {
		for _, mw := range []string{"hilrig", "iceoryx", "cyclonedds"} {
			h := report.NewHistogram()
			for i := int64(0); i < 2000; i++ {
				h.Record(bases[mw][k-1] + i*bases[mw][k-1]/2000)
			}
			c := report.NewCase(&report.Route{From: "board-a", To: "board-b", SameKernel: true, Class: report.ClassSharedMemory},
				report.CaseSpec{Suite: "latency", Name: report.RepName(mw+" shm-copy reliable 64B @ 1000 Hz one-way", k), Transport: "shm-copy",
					Middleware: kind.Middleware(mw), PayloadBytes: 64, RateHz: 1000, Reliability: "reliable", Subscribers: 1, Repetition: k,
					Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC of one kernel"}},
				report.Results{Sent: 2000, Delivered: 2000, Histogram: h})
			c.Finalize()
			r.Cases = append(r.Cases, *c)
		}
	}
	return r
}

// TestRenderMiddlewareMatrix: the first screen answers "which bus is
// faster" in one matrix before any detail table: scenario × middleware,
// the row's best marked, differences that are not significant greyed,
// and a run without repetitions says it can call nothing.
func TestRenderMiddlewareMatrix(t *testing.T) {
	var out bytes.Buffer
	if err := reporthtml.Render(&out, reporthtml.Input{Result: repeatedResult()}); err != nil {
		t.Fatal(err)
	}
	root := doc(t, out.Bytes())
	first, m := byID(root, "first-screen"), byID(root, "mw-matrix")
	if first == nil || m == nil {
		t.Fatal("no matrix")
	}
	inFirst := false
	walk(first, func(n *html.Node) { inFirst = inFirst || n == m })
	page := out.String()
	if !inFirst || strings.Index(page, `id="mw-matrix"`) > strings.Index(page, `id="summary"`) || strings.Index(page, `id="mw-matrix"`) > strings.Index(page, `id="middlewares"`) {
		t.Error("matrix not on the first screen before the detail tables")
	}
	var heads []string
	for _, th := range elems(m, "th") {
		heads = append(heads, text(th))
	}
	if got := strings.Join(heads, ","); got != "scenario,hilrig,iceoryx,cyclonedds" {
		t.Errorf("matrix columns %s", got)
	}
	trs := elems(elems(m, "tbody")[0], "tr")
	if len(trs) != 1 {
		t.Fatalf("%d matrix rows, want 1", len(trs))
	}
	tds := elems(trs[0], "td")
	if len(tds) != 4 || attr(elems(tds[0], "a")[0], "href") != "#mw-row-0" {
		t.Fatalf("%d cells, want scenario + 3, linked to the detail", len(tds))
	}
	// Each cell: a p50 and a p99 line.
	span := func(col, stat int) *html.Node { return elems(tds[col], "span")[stat] }
	for stat := range 2 {
		h, ice, cyc := span(1, stat), span(2, stat), span(3, stat)
		if !strings.Contains(attr(h, "class"), "best") || strings.Contains(attr(h, "class"), "grey") {
			t.Errorf("stat %d: hilrig %q class %q, want best and not grey (iceoryx differs)", stat, text(h), attr(h, "class"))
		}
		if strings.Contains(attr(ice, "class"), "grey") || !strings.Contains(text(ice), "hilrig faster") || !strings.Contains(attr(ice, "title"), "95 % interval") {
			t.Errorf("stat %d: iceoryx %q class %q title %q, want a significant call", stat, text(ice), attr(ice, "class"), attr(ice, "title"))
		}
		if !strings.Contains(attr(cyc, "class"), "grey") || !strings.Contains(text(cyc), "≈") {
			t.Errorf("stat %d: cyclonedds %q class %q, want greyed, indistinguishable", stat, text(cyc), attr(cyc, "class"))
		}
	}
	if !strings.Contains(text(span(1, 0)), "[") {
		t.Errorf("hilrig p50 %q lacks its spread over the repetitions", text(span(1, 0)))
	}
	// The detail table groups the repetitions: one line per middleware.
	if rows := mwRows(root); len(rows) != 1 || len(elems(elems(rows[0], "tbody")[0], "tr")) != 3 {
		t.Errorf("detail: %d rows", len(rows))
	}

	// One run per middleware (today's results): shown, nothing called.
	out.Reset()
	if err := reporthtml.Render(&out, reporthtml.Input{Result: peerResult()}); err != nil {
		t.Fatal(err)
	}
	root = doc(t, out.Bytes())
	if m = byID(root, "mw-matrix"); m == nil || !strings.Contains(text(byID(root, "first-screen")), "one run (no repetitions") {
		t.Fatal("single-run result: no matrix or no word that nothing can be called")
	}
	for _, sp := range elems(m, "span") {
		if text(sp) != "p50 —" && text(sp) != "p99 —" && !strings.Contains(text(sp), "=") && !strings.Contains(attr(sp, "class"), "grey") {
			t.Errorf("single run: peer cell %q class %q not greyed", text(sp), attr(sp, "class"))
		}
	}
	checkMiddlewareSection(t, root)
}
