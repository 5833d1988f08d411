package agentproto_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
)

// An agent sends one window per endpoint every Window (40 a second with
// 10 subscribers at 250 ms) from the board it is measuring, so a window's
// encoding must not feed that board's GC: it once cost ~820 KB of garbage
// (a fresh BestCompression zlib writer per histogram). Bytes, not time:
// the bound cannot flake on a slow machine.
func TestWindowEncodingGarbage(t *testing.T) {
	const n, perWindow = 200, 16 << 10
	h := report.NewHistogram()
	for i := range 250 {
		h.Record(int64(20000 + 997*i))
	}
	enc := agentproto.NewEncoder(io.Discard)
	m := &agentproto.Msg{Kind: agentproto.KindWindow, Window: &agentproto.Window{
		Endpoint: "sub-3", Index: 7, StartNs: 1, EndNs: 250_000_001, Received: 250,
		Latency: h, RSSBytes: 40 << 20, HeapLiveBytes: 8 << 20, HeapAllocBytes: 1 << 30,
	}}
	if err := enc.Encode(m); err != nil { // warm the pooled encoder
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > perWindow {
		t.Fatalf("encoding one window allocates %d bytes, want ≤ %d", per, perWindow)
	} else {
		t.Logf("%d bytes allocated per window message", per)
	}
}
