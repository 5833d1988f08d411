package steps

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
)

// TestBridgeCompare: the through case carries the direct path's figures,
// through − direct, the bridge's CPU and own account and the seed's
// claim, as values; it is not judged (its bounds are dropped).
func TestBridgeCompare(t *testing.T) {
	hist := func(ns ...int64) *report.Histogram {
		h := report.NewHistogram()
		for _, v := range ns {
			h.Record(v)
		}
		return h
	}
	mk := func(name string, h *report.Histogram) *report.Case {
		c := report.NewCase(nil, report.CaseSpec{Name: name, Bounds: &report.Bounds{}}, report.Results{Sent: h.Count(), Delivered: h.Count(), Histogram: h})
		c.Finalize()
		return c
	}
	direct := mk("direct", hist(10_000, 10_000, 20_000))
	through := &Ran{Case: mk("through", hist(30_000, 30_000, 50_000)), Result: &rig.FlowResult{Bridge: &rig.BridgeUsage{
		Board: "board-b", CPU: 20 * time.Millisecond, Wall: time.Second,
		Health: &bridgeconf.HealthRecord{Forwarded: 3, AddedP50Ns: 4000, AddedP99Ns: 6000, AddedMaxNs: 7000},
	}}}
	c := BridgeCompare(through, direct)
	d, tr := direct.Summary, c.Summary
	for k, want := range map[report.ExtraKey]float64{
		report.ExtraDirectP50:       float64(d.P50),
		report.ExtraDirectMax:       float64(d.Max),
		report.ExtraBridgeAddedP50:  float64(tr.P50 - d.P50),
		report.ExtraBridgeAddedP99:  float64(tr.P99 - d.P99),
		report.ExtraBridgeCPU:       2,
		report.ExtraBridgeOwnP50:    4000,
		report.ExtraBridgeForwarded: 3,
		report.ExtraSeedBridgeAdded: 8000,
		report.ExtraSeedBridgeCPU:   1.2,
	} {
		if got, ok := c.Extra[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if tr.P50-d.P50 <= 0 {
		t.Errorf("through p50 %d not above direct %d", tr.P50, d.P50)
	}
	if c.Bounds != nil {
		t.Errorf("bounds %+v: the bridge case is reported, not judged", c.Bounds)
	}
	// Without a direct case there is nothing to subtract: said, not zero.
	c2 := BridgeCompare(&Ran{Case: mk("through", hist(30_000))}, nil)
	if _, ok := c2.Extra[report.ExtraBridgeAddedP50]; ok {
		t.Error("an added figure without a direct path")
	}
}
