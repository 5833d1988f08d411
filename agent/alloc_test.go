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

// TestOnMessageStampsAllocs: with Start.Stamps the hot path keeps each
// message's stamps in the room made at start, still allocation free, and
// counts (not grows for) those past it.
func TestOnMessageStampsAllocs(t *testing.T) {
	e := &endpoint{s: agentproto.Start{Stamps: 100}, win: report.NewHistogram(),
		stamps: make([]agentproto.MessageStamp, 0, 100)}
	m := &middleware.Message{Header: middleware.Header{Seq: 1, SendMono: 1000}, RecvMono: 51000}
	allocs := testing.AllocsPerRun(500, func() {
		m.Header.Seq++
		m.RecvMono += 10
		if err := e.onMessage(m, nil, false, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("onMessage with stamps allocates %v per call, want 0", allocs)
	}
	if len(e.stamps) != 100 || cap(e.stamps) != 100 || e.stampsDropped != 401 {
		t.Fatalf("%d stamps in %d, %d dropped; want 100 in 100, 401 dropped", len(e.stamps), cap(e.stamps), e.stampsDropped)
	}
	if s := e.stamps[0]; s.Seq != 2 || s.RecvMono != 51010 || s.LatencyNs != 50010 {
		t.Fatalf("first stamp %+v", s)
	}
}
