package report_test

import (
	"bytes"
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
	if mk == report.OneWay {
		c.Method = report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC of one kernel (" + from + " → " + to + " on the same host)"}
		c.Notes = append(c.Notes, "publisher on "+from+", subscriber(s) on "+to)
	} else {
		c.Method = report.Method{Kind: report.RTTHalf, Clocks: "CLOCK_MONOTONIC of the pinging board (" + from + "); no clock sync"}
		c.Notes = append(c.Notes, "round trip between the rack's boards: pinger on "+from+", echo on "+to+"; the echo republishes")
	}
	if mw != "hilrig" {
		c.Notes = append(c.Notes, "peer: "+mw+" 1.0, lo only", "peer: a remark of the suite, not the configuration")
		c.Extra = map[string]float64{"discovery_ns": 2e6}
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
		// Round trips: the class comes from the one-way case of the same
		// boards (a round trip names only the pinger's clock).
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
	for _, tc := range []struct {
		transport string
		kind      kind.MethodKind
		clocks    string
		want      kind.Class
	}{
		{"shm-loan", report.OneWay, "", report.ClassSharedMemory},
		{"intra", report.OneWay, "", report.ClassInProcess},
		{"udp", report.OneWay, "CLOCK_MONOTONIC of one kernel (a → b on the same host)", report.ClassUDPOneHost},
		{"udp", report.OneWay, "CLOCK_TAI of vm-a and vm-b, disciplined by ptp4l", report.ClassUDPBoards},
		{"udp", report.RTTHalf, "CLOCK_MONOTONIC of the pinging end (controller host)", report.ClassUDPOneHost},
		{"udp", report.RTTHalf, "CLOCK_MONOTONIC of the pinging board (vm-a); no clock sync", report.ClassUDP},
	} {
		c := report.Case{Transport: tc.transport, Method: report.Method{Kind: tc.kind, Clocks: tc.clocks}}
		if got := report.TransportClass(&c); got != tc.want {
			t.Errorf("%s %s %q: %q, want %q", tc.transport, tc.kind, tc.clocks, got, tc.want)
		}
	}
}
