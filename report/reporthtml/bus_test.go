package reporthtml_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
)

// A reaction case's section lists the one-way bus cases of the run on its
// path (report.BusOnSamePath) with links to their sections and their
// figures; a bus case's own section has no such table.
func TestReactionShowsTheBusOnItsPath(t *testing.T) {
	r := fixedResult() // case-0, case-1: latency cases without a route
	ab := report.Route{From: "board-a", To: "board-b", SameKernel: true, Class: kind.ClassSharedMemory}
	h := report.NewHistogram()
	h.Record(40_000)
	bus := report.NewCase(&ab, report.CaseSpec{Suite: "latency", Name: "shm 64B a→b", PayloadBytes: 64, Method: report.Method{Kind: kind.OneWay}},
		report.Results{Sent: 1, Delivered: 1, Histogram: h})
	bus.Finalize()
	h2 := report.NewHistogram()
	h2.Record(130_000)
	react := report.NewCase(&ab, report.CaseSpec{Suite: "reaction", Name: "imu reaction", Middleware: kind.Hilrig, PayloadBytes: 64, Method: report.Method{Kind: kind.OneWay}},
		report.Results{Sent: 1, Delivered: 1, Histogram: h2})
	react.Add(report.Addition{By: "test", Extra: map[report.ExtraKey]float64{report.ExtraDUTMissRate: 0}})
	react.Finalize()
	r.Cases = append(r.Cases, *bus, *react) // case-2, case-3
	var out bytes.Buffer
	if err := reporthtml.Render(&out, reporthtml.Input{Result: r}); err != nil {
		t.Fatal(err)
	}
	root := doc(t, out.Bytes())
	tables := func(id string) []string {
		var cls []string
		for _, tb := range elems(byID(root, id), "table") {
			cls = append(cls, attr(tb, "class"))
		}
		return cls
	}
	sec := byID(root, "case-3")
	var busTable bool
	for _, tb := range elems(sec, "table") {
		if attr(tb, "class") != "bus" {
			continue
		}
		busTable = true
		rows := elems(elems(tb, "tbody")[0], "tr")
		if len(rows) != 1 {
			t.Fatalf("bus rows %d, want 1", len(rows))
		}
		cells := elems(rows[0], "td")
		a := elems(cells[0], "a")
		if len(a) != 1 || attr(a[0], "href") != "#case-2" || text(a[0]) != "latency / shm 64B a→b" {
			t.Errorf("bus link %q", text(cells[0]))
		}
		if got := text(cells[1]); got != "board-a → board-b, shared memory" {
			t.Errorf("route cell %q", got)
		}
		if got := text(cells[3]); !strings.Contains(got, "40") {
			t.Errorf("p50 cell %q", got)
		}
	}
	if !busTable {
		t.Errorf("the reaction's section has no bus table: tables %q", tables("case-3"))
	}
	for _, id := range []string{"case-0", "case-2"} {
		for _, cls := range tables(id) {
			if cls == "bus" {
				t.Errorf("%s is no reaction but has a bus table", id)
			}
		}
	}
}
