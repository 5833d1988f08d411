package report_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/hilrig/hilrig/report"
)

// TestAddRecordsWhoAddedWhat: Add appends notes and checks, sets figures
// (keeping those of earlier additions), drops bounds and checks when
// Unjudged, records each non-empty addition in order, and the record
// survives the result file.
func TestAddRecordsWhoAddedWhat(t *testing.T) {
	lost := int64(0)
	c := report.NewCase(nil, report.CaseSpec{Suite: "s", Name: "n", Bounds: &report.Bounds{MaxLost: &lost}}, report.Results{Sent: 1, Delivered: 1})
	c.Finalize()
	if len(c.Checks) == 0 {
		t.Fatal("bounded case has no checks to drop")
	}
	c.Add(report.Noted("peer", "peer: x 1.0"))
	c.Add(report.Addition{By: "peer"}) // adds nothing: not recorded
	c.Add(report.Addition{By: "discovery", Extra: map[report.ExtraKey]float64{report.ExtraDiscovery: 2e6, report.ExtraColdStarts: 3}})
	c.Add(report.Addition{By: "unjudge", Unjudged: true, Notes: []string{"not judged"}})
	c.Add(report.Addition{By: "scope", Extra: map[report.ExtraKey]float64{report.ExtraScopeP50: 7},
		Checks: []report.Check{{Bound: "scope_p50", Verdict: report.Pass}}})
	c.Finalize()
	if want := []string{"peer: x 1.0", "not judged"}; !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
	if want := map[report.ExtraKey]float64{report.ExtraDiscovery: 2e6, report.ExtraColdStarts: 3, report.ExtraScopeP50: 7}; !reflect.DeepEqual(c.Extra, want) {
		t.Errorf("extra %v, want %v", c.Extra, want)
	}
	if c.Bounds != nil || len(c.Checks) != 1 || c.Checks[0].Bound != "scope_p50" || c.Verdict != report.Pass {
		t.Errorf("bounds %v, checks %+v, verdict %s: want no bounds, the scope check alone, pass", c.Bounds, c.Checks, c.Verdict)
	}
	want := []report.Added{
		{By: "peer", Notes: 1},
		{By: "discovery", Extra: []report.ExtraKey{report.ExtraColdStarts, report.ExtraDiscovery}},
		{By: "unjudge", Notes: 1, Unjudged: true},
		{By: "scope", Extra: []report.ExtraKey{report.ExtraScopeP50}, Checks: []string{"scope_p50"}},
	}
	if !reflect.DeepEqual(c.Additions, want) {
		t.Errorf("additions %+v, want %+v", c.Additions, want)
	}
	r := report.NewResult(report.RunInfo{})
	r.Cases = append(r.Cases, *c)
	var buf bytes.Buffer
	if err := r.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := report.Decode(buf.Bytes(), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Cases[0]; !reflect.DeepEqual(got.Additions, want) || !reflect.DeepEqual(got.Extra, c.Extra) {
		t.Errorf("after the file: additions %+v, extra %v", got.Additions, got.Extra)
	}
}

// TestOldResultReads: a result file written before cases recorded their
// additions, with an Extra key no constant names, still reads.
func TestOldResultReads(t *testing.T) {
	r, err := report.Decode([]byte(`{"schema_version": 1, "cases": [{"name": "n", "suite": "s", "method": {}, "sent": 1, "delivered": 1, "lost": 0,
		"summary": {}, "verdict": "pass", "extra": {"discovery_ns": 5, "a key of another build": 1.5}, "notes": ["a note"]}]}`), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	c := r.Cases[0]
	if c.Additions != nil || c.Extra[report.ExtraDiscovery] != 5 || c.Extra["a key of another build"] != 1.5 || !slices.Equal(c.Notes, []string{"a note"}) {
		t.Errorf("old case: additions %+v, extra %v, notes %q", c.Additions, c.Extra, c.Notes)
	}
}
