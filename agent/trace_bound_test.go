package agent

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/hilrig/hilrig/tracing"
)

// A snapshot of a long wait on a busy machine holds more events than the
// agent protocol's line can carry: its trace-event JSON keeps the newest
// events that fit and still parses; a small one is kept whole.
func TestBoundedChromeKeepsNewestThatFit(t *testing.T) {
	var evs []tracing.Event
	for i := range 10000 {
		evs = append(evs, tracing.Event{Ns: int64(i) * 1000, CPU: i % 2, Kind: tracing.Switch, Comm: "busy",
			PrevComm: "busy-" + strconv.Itoa(i%7), PrevPID: 100 + i%7, NextComm: "busy-" + strconv.Itoa((i+1)%7), NextPID: 100 + (i+1)%7, PrevState: "R"})
	}
	const limit = 128 << 10
	all, n, err := boundedChrome(evs, 1<<30)
	if err != nil || n != len(evs) || len(all) <= limit {
		t.Fatalf("unbounded: %d bytes, %d events kept, %v (the test needs more than %d bytes)", len(all), n, err, limit)
	}
	b, kept, err := boundedChrome(evs, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit || kept >= len(evs) || kept < int(float64(len(evs))*limit/float64(len(all))/2) {
		t.Fatalf("bounded to %d bytes: %d bytes, %d of %d events", limit, len(b), kept, len(evs))
	}
	var doc struct {
		TraceEvents []struct {
			Ph string  `json:"ph"`
			Ts float64 `json:"ts"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) == 0 {
		t.Fatalf("bounded JSON: %v, %d events", err, len(doc.TraceEvents))
	}
	var last float64
	for _, e := range doc.TraceEvents {
		last = max(last, e.Ts)
	}
	if want := float64(evs[len(evs)-1].Ns) / 1e3; last < want-1 {
		t.Fatalf("newest event at %v µs, want the last one (%v µs) kept", last, want)
	}
}
