package report_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
)

// peerCase is a finalized case of the latency suite's comparison, shaped
// as suites/internal/steps writes it: middleware, transport, the boards
// in a note, the peer's configuration note and discovery time.
func peerCase(name, mw, transport string, mk kind.MethodKind, payload int64, rate float64, base int64, from, to string) report.Case {
	h := report.NewHistogram()
	for i := int64(0); i < 1000; i++ {
		h.Record(base + i*base/1000)
	}
	c := report.Case{Name: name, Suite: "latency", Middleware: kind.Middleware(mw), Transport: transport, PayloadBytes: payload, RateHz: rate,
		Reliability: "reliable", Subscribers: 1, Sent: 1000, Delivered: 1000, Histogram: h, CPUPercent: 10, RSSBytes: 10 << 20}
	// Where the ends ran is the route the rig decided (rig.RouteOf), not
	// the prose of Clocks or Notes below.
	c.Route = &report.Route{From: from, To: to, SameKernel: true, Class: report.ClassUDPOneHost}
	if strings.HasPrefix(transport, "shm") {
		c.Route.Class = report.ClassSharedMemory
	}
	if mk == report.OneWay {
		c.Method = report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC of one kernel (" + from + " → " + to + " on the same host)"}
		c.Notes = append(c.Notes, "publisher on "+from+", subscriber(s) on "+to)
	} else {
		c.Method = report.Method{Kind: report.RTTHalf, Clocks: "CLOCK_MONOTONIC of the pinging board (" + from + "); no clock sync"}
		c.Notes = append(c.Notes, "round trip between the rack's boards: pinger on "+from+", echo on "+to+"; the echo republishes")
	}
	if mw != "hilrig" {
		c.Notes = append(c.Notes, "peer: "+mw+" 1.0, lo only", "peer: a remark of the suite, not the configuration")
		c.Extra = map[report.ExtraKey]float64{report.ExtraDiscovery: 2e6}
	}
	c.Finalize()
	return c
}

func TestCompareMiddlewares(t *testing.T) {
	r := report.NewResult(report.RunInfo{Rack: "sim"})
	r.Cases = []report.Case{
		// The shm row: the main sweep's hilrig case, the comparison's
		// hilrig case (the baseline), hilrig on loan, and iceoryx.
		peerCase("shm-copy reliable 64B @ 1000 Hz one-way", "hilrig", "shm-copy", report.OneWay, 64, 1000, 30_000, "board-a", "board-b"),
		peerCase("iceoryx shm-copy reliable 64B @ 1000 Hz one-way", "iceoryx", "shm-copy", report.OneWay, 64, 1000, 40_000, "board-a", "board-b"),
		peerCase("hilrig shm-copy reliable 64B @ 1000 Hz one-way", "", "shm-copy", report.OneWay, 64, 1000, 20_000, "board-a", "board-b"),
		peerCase("shm-loan reliable 64B @ 1000 Hz one-way", "hilrig", "shm-loan", report.OneWay, 64, 1000, 10_000, "board-a", "board-b"),
		// The UDP row between two namespaces of one kernel.
		peerCase("hilrig udp reliable 4KiB @ 50 Hz one-way", "hilrig", "udp", report.OneWay, 4096, 50, 100_000, "board-b", "board-c"),
		peerCase("cyclonedds udp reliable 4KiB @ 50 Hz one-way", "cyclonedds", "udp", report.OneWay, 4096, 50, 200_000, "board-b", "board-c"),
		peerCase("fastdds-udp udp reliable 4KiB @ 50 Hz one-way", "fastdds-udp", "udp", report.OneWay, 4096, 50, 50_000, "board-b", "board-c"),
		// Round trips: the class comes from their route (their clocks
		// name only the pinger's).
		peerCase("hilrig udp reliable 4KiB round trip", "hilrig", "udp", report.RTTHalf, 4096, 0, 60_000, "board-b", "board-c"),
		peerCase("cyclonedds udp reliable 4KiB round trip", "cyclonedds", "udp", report.RTTHalf, 4096, 0, 30_000, "board-c", "board-b"),
		// hilrig only: no peer, no row.
		peerCase("udp reliable 1MiB @ 50 Hz one-way", "hilrig", "udp", report.OneWay, 1<<20, 50, 90_000, "board-b", "board-c"),
	}
	rows := report.CompareMiddlewares(r)
	if len(rows) != 3 {
		for _, row := range rows {
			t.Logf("row %s", row.Title())
		}
		t.Fatalf("%d rows, want 3 (shm 64 B, udp 4 KiB one-way, udp 4 KiB RTT/2)", len(rows))
	}

	shm := rows[0]
	if shm.Class != report.ClassSharedMemory || shm.Kind != report.OneWay || shm.PayloadBytes != 64 || shm.RateHz != 1000 {
		t.Errorf("row 0 %q", shm.Title())
	}
	var labels []string
	for _, e := range shm.Entries {
		labels = append(labels, e.Label)
	}
	if got := strings.Join(labels, ","); got != "hilrig shm-copy,hilrig shm-copy #2,hilrig shm-loan,iceoryx" {
		t.Errorf("shm labels %s: hilrig first, transport named when the row has several", got)
	}
	if b := shm.Entries[shm.Baseline]; b.Case.Name != "hilrig shm-copy reliable 64B @ 1000 Hz one-way" || b.Middleware != "hilrig" {
		t.Errorf("baseline %q, want the comparison's own hilrig case on the peer's transport", b.Case.Name)
	}
	ice := shm.Entries[3]
	// hilrig 20 µs base vs iceoryx 40 µs base: every latency ratio is 0.5.
	if ice.Ratio.P50 < 0.49 || ice.Ratio.P50 > 0.51 || ice.Ratio.P99 < 0.49 || ice.Ratio.P99 > 0.51 || ice.Ratio.CPU != 1 || ice.Ratio.RSS != 1 {
		t.Errorf("iceoryx ratios %+v, want p50/p99 0.5, CPU/RSS 1", ice.Ratio)
	}
	if !ice.HasDiscovery || ice.DiscoveryNs != 2e6 || ice.Config != "iceoryx 1.0, lo only" {
		t.Errorf("iceoryx discovery %v %v, config %q", ice.HasDiscovery, ice.DiscoveryNs, ice.Config)
	}
	if shm.Entries[shm.Baseline].Ratio != (report.Ratios{}) {
		t.Errorf("baseline has ratios %+v", shm.Entries[shm.Baseline].Ratio)
	}

	udp := rows[1]
	if udp.Class != report.ClassUDPOneHost || len(udp.Entries) != 3 || udp.Baseline != 0 {
		t.Fatalf("udp row %q with %d entries, baseline %d", udp.Title(), len(udp.Entries), udp.Baseline)
	}
	if fd := udp.Entries[2]; fd.Middleware != "fastdds-udp" || fd.Ratio.P50 < 1.9 || fd.Ratio.P50 > 2.1 {
		t.Errorf("fastdds-udp entry %s ratio p50 %v, want ≈2 (hilrig slower)", fd.Middleware, fd.Ratio.P50)
	}
	rtt := rows[2]
	if rtt.Kind != report.RTTHalf || rtt.Class != report.ClassUDPOneHost || rtt.RateHz != 0 || len(rtt.Entries) != 2 {
		t.Errorf("rtt row %q, %d entries", rtt.Title(), len(rtt.Entries))
	}
	if !strings.Contains(rtt.Title(), "RTT/2") || !strings.Contains(rtt.Title(), "max") || !strings.Contains(udp.Title(), "4 KiB") {
		t.Errorf("titles %q, %q", rtt.Title(), udp.Title())
	}

	var out bytes.Buffer
	if err := report.WriteMiddlewareTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(base)", "cyclonedds", "0.50", "2.00", "iceoryx: iceoryx 1.0, lo only", "2.00ms", "HILRIG/X P99"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}

	// Across two results: the runs are named in the labels.
	r2 := report.NewResult(report.RunInfo{Rack: "sim"})
	r2.Cases = []report.Case{peerCase("iceoryx shm-copy reliable 64B @ 1000 Hz one-way", "iceoryx", "shm-copy", report.OneWay, 64, 1000, 10_000, "board-a", "board-b")}
	rows = report.CompareMiddlewares(r, r2)
	if len(rows) != 3 || len(rows[0].Entries) != 5 || rows[0].Entries[4].Label != "iceoryx [run 2]" || rows[0].Entries[4].Ratio.P50 < 1.9 {
		t.Errorf("two runs: %d rows, first %+v", len(rows), rows[0].Entries)
	}
	// No peer: nothing to compare, said so.
	out.Reset()
	if err := report.WriteMiddlewareTable(&out, report.CompareMiddlewares(fixedResult())); err != nil || !strings.Contains(out.String(), "nothing to compare") {
		t.Errorf("no peers: %v %q", err, out.String())
	}
}

func TestTransportClass(t *testing.T) {
	oneHost := &report.Route{From: "a", To: "b", SameKernel: true, Class: report.ClassUDPOneHost}
	boards := &report.Route{From: "vm-a", To: "vm-b", Class: report.ClassUDPBoards}
	for _, tc := range []struct {
		transport string
		kind      kind.MethodKind
		route     *report.Route
		clocks    string
		want      kind.Class
	}{
		{"shm-loan", report.OneWay, nil, "", report.ClassSharedMemory},
		{"intra", report.OneWay, nil, "", report.ClassInProcess},
		{"udp", report.OneWay, oneHost, "CLOCK_MONOTONIC of one kernel (a → b on the same host)", report.ClassUDPOneHost},
		{"udp", report.OneWay, boards, "CLOCK_TAI of vm-a and vm-b, disciplined by ptp4l", report.ClassUDPBoards},
		{"udp", report.RTTHalf, oneHost, "CLOCK_MONOTONIC of the pinging end (controller host)", report.ClassUDPOneHost},
		// A round trip between two kernels: its route says so, although
		// its clocks name only the pinger's.
		{"udp", report.RTTHalf, boards, "CLOCK_MONOTONIC of the pinging board (vm-a); no clock sync", report.ClassUDPBoards},
		// No route (a result written before cases carried one): the
		// report does not guess from the prose.
		{"udp", report.RTTHalf, nil, "CLOCK_MONOTONIC of the pinging board (vm-a); no clock sync", report.ClassUDP},
		{"udp", report.OneWay, nil, "CLOCK_MONOTONIC of one kernel (a → b on the same host)", report.ClassUDP},
	} {
		c := report.Case{Transport: tc.transport, Route: tc.route, Method: report.Method{Kind: tc.kind, Clocks: tc.clocks}}
		if got := report.TransportClass(&c); got != tc.want {
			t.Errorf("%s %s %q: %q, want %q", tc.transport, tc.kind, tc.clocks, got, tc.want)
		}
	}
}

// TestRouteInResultFile: a case's route is written to the result file and
// read back as the same facts; a file written before cases carried routes
// (no "route") still reads, with no route, and a route with an unknown
// class is refused naming the classes.
func TestRouteInResultFile(t *testing.T) {
	r := report.NewResult(report.RunInfo{Rack: "sim"})
	r.Cases = []report.Case{peerCase("cyclonedds udp reliable 4KiB round trip", "cyclonedds", "udp", report.RTTHalf, 4096, 0, 30_000, "board-c", "board-b")}
	r.Cases[0].Route.Class, r.Cases[0].Route.SameKernel = report.ClassUDPBoards, false
	p := t.TempDir() + "/r.json"
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Cases[0].Route; got == nil || *got != (report.Route{From: "board-c", To: "board-b", Class: report.ClassUDPBoards}) {
		t.Errorf("route read back %+v", got)
	}
	old := `{"schema_version":1,"run":{},"cases":[{"name":"udp","suite":"latency","transport":"udp","middleware":"hilrig","reliability":"reliable","method":{"kind":"one-way","clocks":"CLOCK_MONOTONIC of one kernel (a → b on the same host)","uncertainty_ns":0},"sent":1,"delivered":1,"lost":0,"summary":{},"verdict":"pass"}]}`
	o, err := report.Decode([]byte(old), "old.json")
	if err != nil || o.Cases[0].Route != nil || o.Cases[0].Middleware != kind.Hilrig || o.Cases[0].Method.Kind != report.OneWay {
		t.Fatalf("old file: %v, %+v", err, o)
	}
	bad := strings.Replace(old, `"method"`, `"route":{"from":"a","to":"b","same_kernel":true,"class":"carrier"},"method"`, 1)
	if _, err := report.Decode([]byte(bad), "bad.json"); err == nil || !strings.Contains(err.Error(), "UDP, one host") {
		t.Errorf("unknown class: %v, want a refusal naming the classes", err)
	}
}

// TestNewCase: the one constructor puts route, spec and results in their
// fields, and the case owns a copy of the route (the rig's is not aliased).
func TestNewCase(t *testing.T) {
	rt := report.Route{From: "board-b", To: "board-c", SameKernel: true, Class: report.ClassUDPOneHost}
	h := report.NewHistogram()
	h.Record(1000)
	b := &report.Bounds{Max: 5}
	c := report.NewCase(&rt, report.CaseSpec{Suite: "latency", Name: "n", Labels: []string{"l"}, Transport: "udp", Middleware: kind.CycloneDDS,
		PayloadBytes: 64, RateHz: 10, Reliability: kind.BestEffort, Subscribers: 2, Method: report.Method{Kind: report.OneWay, Clocks: "c"}, Bounds: b},
		report.Results{Sent: 5, Delivered: 4, Lost: 1, Excluded: 2, Histogram: h, CPUPercent: 3, RSSBytes: 7, Duration: 9, Failure: "f"})
	want := report.Case{Suite: "latency", Name: "n", Labels: []string{"l"}, Transport: "udp", Middleware: kind.CycloneDDS, PayloadBytes: 64,
		RateHz: 10, Reliability: kind.BestEffort, Subscribers: 2, Method: report.Method{Kind: report.OneWay, Clocks: "c"}, Bounds: b,
		Sent: 5, Delivered: 4, Lost: 1, Excluded: 2, Histogram: h, CPUPercent: 3, RSSBytes: 7, Duration: 9, Failure: "f", Route: &rt}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("NewCase = %+v\nwant %+v", *c, want)
	}
	rt.Class = report.ClassUDPBoards
	if c.Route.Class != report.ClassUDPOneHost {
		t.Error("the case's route aliases the caller's")
	}
	if c := report.NewCase(nil, report.CaseSpec{Name: "x"}, report.Results{}); c.Route != nil || c.Name != "x" {
		t.Errorf("NewCase without a route: %+v", c)
	}
}

// TestCompareMiddlewaresRepetitions: a cell that ran every middleware
// five times, interleaved, is one entry per middleware with medians,
// spreads and a call per ratio; the matrix marks the best and leaves the
// indistinguishable ungreyed only where significant; the short form's
// two repetitions call nothing; low-rate percentiles are marked.
func TestCompareMiddlewaresRepetitions(t *testing.T) {
	cell := func(reps int, rate float64, bases map[string][]int64) *report.Result {
		r := report.NewResult(report.RunInfo{Rack: "sim"})
		for k := 1; k <= reps; k++ { // interleaved: A B C A B C …
			for _, mw := range []string{"hilrig", "iceoryx", "cyclonedds"} {
				c := peerCase(report.RepName(mw+" shm-copy reliable 64B one-way", k), mw, "shm-copy", report.OneWay, 64, rate, bases[mw][k-1], "board-a", "board-b")
				c.Repetition = k
				r.Cases = append(r.Cases, c)
			}
		}
		return r
	}
	bases := map[string][]int64{
		"hilrig":     {20_000, 21_000, 19_000, 22_000, 20_500},
		"iceoryx":    {40_000, 41_000, 39_000, 45_000, 42_000}, // clearly slower than hilrig
		"cyclonedds": {19_000, 23_000, 20_000, 21_500, 18_000}, // overlaps hilrig
	}
	rows := report.CompareMiddlewares(cell(5, 1000, bases))
	if len(rows) != 1 || len(rows[0].Entries) != 3 {
		t.Fatalf("%d rows, want one row of 3 entries (repetitions grouped): %+v", len(rows), rows)
	}
	row := rows[0]
	h, ice, cyc := row.Entries[0], row.Entries[1], row.Entries[2]
	if h.Label != "hilrig" || len(h.Reps) != 5 || h.Case.Repetition != 1 || row.Baseline != 0 || h.Sent != 5000 {
		t.Errorf("hilrig entry %q, %d reps, first rep %d, baseline %d, sent %d", h.Label, len(h.Reps), h.Case.Repetition, row.Baseline, h.Sent)
	}
	// peerCase's p50 is ≈1.5 × its base: medians over the five runs.
	p50 := h.Stats[report.StatP50]
	if p50.Reps != 5 || p50.Median < 1.5*20_500*0.98 || p50.Median > 1.5*20_500*1.02 || p50.Min >= p50.Median || p50.Max <= p50.Median {
		t.Errorf("hilrig p50 across reps %+v, want median ≈30.7µs inside its spread", p50)
	}
	if c := ice.Calls[report.StatP50]; c.Call != report.CallFaster || c.Hi >= 1 || ice.Ratio.P50 > 0.52 || ice.Ratio.P50 < 0.46 {
		t.Errorf("hilrig vs iceoryx p50 %+v ratio %v, want faster with the interval below 1", c, ice.Ratio.P50)
	}
	if c := cyc.Calls[report.StatP99]; c.Call != report.CallIndistinguishable || c.Lo >= 1 || c.Hi <= 1 {
		t.Errorf("hilrig vs cyclonedds p99 %+v, want indistinguishable", c)
	}
	if h.Calls != nil {
		t.Errorf("baseline has calls %+v", h.Calls)
	}

	m := report.MiddlewareMatrix(rows, report.StatP50)
	if got := fmt.Sprint(m.Middlewares); got != "[hilrig iceoryx cyclonedds]" || len(m.Rows) != 1 {
		t.Fatalf("matrix columns %s, %d rows", got, len(m.Rows))
	}
	cells := m.Rows[0].Cells
	// cyclonedds has the lowest median (20 000 ns base) but is not
	// significantly different from hilrig: best, and greyed.
	if !cells[2].Best || cells[0].Best || cells[1].Best || !cells[2].Grey || cells[1].Grey || cells[0].Grey || !cells[0].Baseline {
		t.Errorf("matrix cells %+v: want cyclonedds best and grey, iceoryx significant, hilrig the baseline", cells)
	}

	var out bytes.Buffer
	if err := report.WriteMiddlewareTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P50: median over repetitions", "*30.", "hilrig faster", "≈", "REPS", "5000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}

	// The short form: two repetitions, a twofold gap, still no call.
	rows = report.CompareMiddlewares(cell(2, 50, bases))
	if c := rows[0].Entries[1].Calls[report.StatP50]; c.Call != report.CallTooFew || c.Ratio > 0.55 {
		t.Errorf("R=2: %+v, want too few repetitions with the ratio still given", c)
	}
	m = report.MiddlewareMatrix(rows, report.StatP50)
	for i, c := range m.Rows[0].Cells {
		if !c.Grey {
			t.Errorf("R=2: cell %d not greyed: %+v", i, c)
		}
	}
	// A low-rate case with 120 samples: its p99 is marked, not hidden.
	r := cell(1, 50, bases)
	for i := range r.Cases {
		h := report.NewHistogram()
		for j := int64(0); j < 120; j++ {
			h.Record(1000 + j)
		}
		r.Cases[i].Histogram = h
		r.Cases[i].Finalize()
	}
	rows = report.CompareMiddlewares(r)
	if s := rows[0].Entries[0].Stats[report.StatP99]; !s.Indicative || s.Samples != 120 || s.Median == 0 {
		t.Errorf("p99 of 120 samples %+v, want shown and indicative", s)
	}
	if cell := report.MiddlewareMatrix(rows, report.StatP99).Rows[0].Cells[0].CellText(); !strings.Contains(cell, "(from 120 samples)") {
		t.Errorf("p99 cell %q, want the sample count", cell)
	}
}
