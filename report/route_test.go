package report_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
)

// busCase is a finalized one-way (or RTT/2) bus case of mw on a route.
func busCase(name string, mw kind.Middleware, mk kind.MethodKind, payload int64, rt report.Route) report.Case {
	h := report.NewHistogram()
	h.Record(50e3)
	c := report.NewCase(&rt, report.CaseSpec{Suite: "latency", Name: name, Middleware: mw, PayloadBytes: payload, Method: report.Method{Kind: mk}},
		report.Results{Sent: 1, Delivered: 1, Histogram: h})
	c.Finalize()
	return *c
}

// The bus cases beside a reaction are the one-way cases of its
// middleware and class between its two boards, either direction, the
// same payload first; never another reaction, an RTT/2 case, another
// class, middleware or pair of boards.
func TestBusOnSamePath(t *testing.T) {
	ab := report.Route{From: "board-a", To: "board-b", SameKernel: true, Class: kind.ClassSharedMemory}
	ba := report.Route{From: "board-b", To: "board-a", SameKernel: true, Class: kind.ClassSharedMemory}
	ac := report.Route{From: "board-a", To: "board-c", SameKernel: true, Class: kind.ClassSharedMemory}
	udp := report.Route{From: "board-a", To: "board-b", SameKernel: true, Class: kind.ClassUDPOneHost}
	react := func(name string, rt *report.Route) report.Case {
		h := report.NewHistogram()
		h.Record(120e3)
		c := report.NewCase(rt, report.CaseSpec{Suite: "reaction", Name: name, Middleware: kind.Hilrig, PayloadBytes: 64, Method: report.Method{Kind: kind.OneWay}},
			report.Results{Sent: 1, Delivered: 1, Histogram: h})
		c.Add(report.Addition{By: "test", Extra: map[report.ExtraKey]float64{report.ExtraDUTMissRate: 0}})
		c.Finalize()
		return *c
	}
	r := &report.Result{Cases: []report.Case{
		busCase("shm 4KiB a→b", "", kind.OneWay, 4096, ab),
		busCase("shm 64B a→b", kind.Hilrig, kind.OneWay, 64, ab),
		busCase("shm 64B b→a", "", kind.OneWay, 64, ba),
		busCase("shm 64B a→c", "", kind.OneWay, 64, ac),
		busCase("udp 64B a→b", "", kind.OneWay, 64, udp),
		busCase("cyclone 64B a→b", kind.CycloneDDS, kind.OneWay, 64, ab),
		busCase("rtt 64B a→b", "", kind.RTTHalf, 64, ab),
		react("imu reaction", &ab),
		react("imu under the mix", &ab),
		react("edge reaction", nil),
	}}
	var got []string
	for _, c := range report.BusOnSamePath(r, &r.Cases[7]) {
		got = append(got, c.Name)
	}
	want := []string{"shm 64B a→b", "shm 64B b→a", "shm 4KiB a→b"}
	if len(got) != len(want) {
		t.Fatalf("beside the reaction: %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("beside the reaction: %q, want %q", got, want)
		}
	}
	if b := report.BusOnSamePath(r, &r.Cases[9]); b != nil {
		t.Errorf("a reaction without a route has bus cases beside it: %v", b)
	}
	if b := report.BusOnSamePath(r, &r.Cases[1]); b != nil {
		t.Errorf("a bus case is not a reaction: %v", b)
	}
}
