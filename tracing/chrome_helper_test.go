package tracing

import (
	"bytes"
	"encoding/json"
	"testing"
)

// checkChrome decodes data as trace-event JSON (object form) and checks
// every event has a known phase, X slices a non-negative duration, and
// that a slice named slice and an instant named instant are present.
func checkChrome(t *testing.T, data []byte, slice, instant string) {
	t.Helper()
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("trace-event JSON does not parse: %v", err)
	}
	var sawSlice, sawInstant bool
	for i, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		name, _ := e["name"].(string)
		if _, ok := e["pid"]; !ok {
			t.Fatalf("event %d has no pid: %v", i, e)
		}
		switch ph {
		case "X":
			n, _ := e["dur"].(json.Number)
			if d, err := n.Float64(); err != nil || d < 0 {
				t.Fatalf("event %d: bad dur %v", i, e["dur"])
			}
			sawSlice = sawSlice || name == slice
		case "i":
			sawInstant = sawInstant || name == instant
		case "M":
		default:
			t.Fatalf("event %d: phase %q not in {X,i,M}", i, ph)
		}
		if ph != "M" {
			if n, _ := e["ts"].(json.Number); n == "" {
				t.Fatalf("event %d: ts %v", i, e["ts"])
			}
		}
	}
	if !sawSlice || !sawInstant {
		t.Fatalf("trace-event JSON lacks slice %q (%v) or instant %q (%v)", slice, sawSlice, instant, sawInstant)
	}
}
