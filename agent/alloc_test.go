package agent

import (
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

type nopMarker struct{ n int }

func (m *nopMarker) Mark() error  { m.n++; return nil }
func (m *nopMarker) Close() error { return nil }

// TestOnMessageAllocs: the subscriber's per-message work allocates nothing.
func TestOnMessageAllocs(t *testing.T) {
	e := &endpoint{s: agentproto.Start{WarmUp: 1}, win: report.NewHistogram()}
	mk := &nopMarker{}
	m := &middleware.Message{Header: middleware.Header{Seq: 1, SendMono: 1000, SendClock: 5}, RecvMono: 51000}
	allocs := testing.AllocsPerRun(1000, func() {
		m.Header.Seq++
		m.RecvMono += 10
		if err := e.onMessage(m, mk, false, 0); err != nil {
			t.Fatal(err)
		}
		_ = e.onMessage(m, mk, true, 0) // clock latency path
	})
	if allocs != 0 {
		t.Errorf("onMessage allocates %v per call, want 0", allocs)
	}
	if e.recv == 0 || mk.n == 0 || e.win.Count() == 0 {
		t.Errorf("nothing recorded: recv %d marks %d hist %d", e.recv, mk.n, e.win.Count())
	}
}
