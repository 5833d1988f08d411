package agent

import (
	"encoding/binary"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// TestOnPingAllocs: the echo's per-ping work (copy, stamp, Send on the
// reply topic) allocates nothing.
func TestOnPingAllocs(t *testing.T) {
	node, err := middleware.OpenNode("echo-alloc", &middleware.NodeOptions{Domain: "echoalloc", ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	reply := middleware.Contract{Topic: "alloc/pong", MaxPayload: 64, Transport: middleware.TransportIntra}
	pub, err := node.NewPublisher(reply, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub, err := node.NewSubscriber(reply, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mk := &nopMarker{}
	e := &endpoint{s: agentproto.Start{Role: agentproto.Echo}, win: report.NewHistogram()}
	ec := &echoer{e: e, pub: hilrigOut{pub: pub, path: agentproto.SendCopy}, mk: mk, buf: make([]byte, 64)}
	ping := make([]byte, 64)
	m := &middleware.Message{Header: middleware.Header{SendMono: 1000}, RecvMono: 51000, Payload: ping}
	allocs := testing.AllocsPerRun(1000, func() {
		m.Header.Seq++
		m.Header.SendMono += 10
		if err := ec.onPing(m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("onPing allocates %v per call, want 0", allocs)
	}
	if e.sent == 0 || e.recv != e.sent || mk.n == 0 {
		t.Errorf("nothing echoed: sent %d recv %d marks %d", e.sent, e.recv, mk.n)
	}
	// The reply carries the ping's Seq and SendMono.
	if got := binary.LittleEndian.Uint64(ec.buf[0:8]); got != m.Header.Seq {
		t.Errorf("reply seq %d, want %d", got, m.Header.Seq)
	}
	if got := int64(binary.LittleEndian.Uint64(ec.buf[8:16])); got != m.Header.SendMono {
		t.Errorf("reply stamp %d, want %d", got, m.Header.SendMono)
	}
}

// TestOnReplyAllocs: the pinger's per-reply work (match, record RTT, wake
// the send loop) allocates nothing, and records RTT on its own stamps.
func TestOnReplyAllocs(t *testing.T) {
	e := &endpoint{s: agentproto.Start{Role: agentproto.Pinger, WarmUp: 1}, win: report.NewHistogram()}
	p := &pinger{e: e, replyCh: make(chan struct{}, 1)}
	p.sentSeq.Store(1 << 40)
	reply := make([]byte, 64)
	m := &middleware.Message{Payload: reply}
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		binary.LittleEndian.PutUint64(reply[0:8], seq)
		binary.LittleEndian.PutUint64(reply[8:16], uint64(1000*seq))
		m.RecvMono = int64(1000*seq) + 7000 // RTT 7 µs
		if err := p.onReply(m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("onReply allocates %v per call, want 0", allocs)
	}
	if e.recv != seq || e.lost != 0 || e.win.Count() != int64(seq-1) {
		t.Errorf("recv %d lost %d recorded %d, want %d 0 %d", e.recv, e.lost, e.win.Count(), seq, seq-1)
	}
	if v := e.win.ValueAtQuantile(50); v < 6990 || v > 7010 {
		t.Errorf("RTT p50 %d ns, want 7000", v)
	}
}

// TestOnReplyRejectsForeignReplies: a reply this pinger did not cause
// fails the endpoint instead of recording a wrong sample; a gap is loss.
func TestOnReplyRejectsForeignReplies(t *testing.T) {
	reply := func(seq uint64, sent, recv int64, n int) *middleware.Message {
		b := make([]byte, n)
		if n >= 16 {
			binary.LittleEndian.PutUint64(b[0:8], seq)
			binary.LittleEndian.PutUint64(b[8:16], uint64(sent))
		}
		return &middleware.Message{Payload: b, RecvMono: recv}
	}
	for _, tc := range []struct {
		name string
		m    *middleware.Message
	}{
		{"short", reply(1, 10, 20, 8)},
		{"unsent seq", reply(9, 10, 20, 64)},
		{"seq zero", reply(0, 10, 20, 64)},
		{"stamp after receipt", reply(1, 30, 20, 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &endpoint{s: agentproto.Start{Role: agentproto.Pinger}, win: report.NewHistogram()}
			p := &pinger{e: e, replyCh: make(chan struct{}, 1)}
			p.sentSeq.Store(5)
			if err := p.onReply(tc.m); err == nil {
				t.Errorf("accepted")
			}
			if e.win.Count() != 0 {
				t.Errorf("recorded a sample")
			}
		})
	}
	e := &endpoint{s: agentproto.Start{Role: agentproto.Pinger}, win: report.NewHistogram()}
	p := &pinger{e: e, replyCh: make(chan struct{}, 1)}
	p.sentSeq.Store(5)
	for _, seq := range []uint64{1, 4, 4} { // 2 and 3 lost, 4 twice
		if err := p.onReply(reply(seq, 10, 20, 64)); err != nil {
			t.Fatal(err)
		}
	}
	if e.recv != 2 || e.lost != 2 || p.stale != 1 || e.win.Count() != 2 {
		t.Errorf("recv %d lost %d stale %d recorded %d, want 2 2 1 2", e.recv, e.lost, p.stale, e.win.Count())
	}
}
