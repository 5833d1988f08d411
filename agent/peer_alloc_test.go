package agent

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// TestPeerHotPathAllocs: on every peer this binary was built with, the Go
// side of a message — the writer's stamped Write through peerOut, the
// reader's Take, the header decode and the subscriber's onMessage —
// allocates nothing. (hilrig's own hot paths: TestOnMessageAllocs,
// TestOnPingAllocs, TestOnReplyAllocs.)
func TestPeerHotPathAllocs(t *testing.T) {
	if len(testPeers) == 0 {
		t.Skip("built without peers (tags cyclonedds, fastdds, iceoryx)")
	}
	for name, open := range testPeers {
		t.Run(name, func(t *testing.T) {
			p, err := open("alloc", agentproto.PeerNet{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			topic := "alloc/" + name
			w, err := p.NewWriter(topic, false, 16, 256)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			r, err := p.NewReader(topic, false, 16, 256, false)
			if err != nil {
				t.Fatal(err)
			}
			out := &peerOut{w: w, clock: stampClockID("")}
			in := &peerIn{r: r}
			defer in.close()
			if _, err := awaitMatch(t.Context(), out.w); err != nil {
				t.Fatal(err)
			}
			e := &endpoint{s: agentproto.Start{Middleware: name}, win: report.NewHistogram()}
			fn := func(m *middleware.Message) error { return e.onMessage(m, nil, false, 0) }
			buf := make([]byte, 200)
			seq := uint64(0)
			one := func() {
				seq++
				if err := out.send(buf, seq); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					data, recv, err := in.r.Take(peerPoll)
					if err != nil {
						t.Fatal(err)
					}
					if data != nil {
						err = in.deliver(data, recv, fn)
						in.r.Release()
						if err != nil {
							t.Fatal(err)
						}
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("message %d not received within 5s", seq)
					}
				}
			}
			for range 20 { // discovery settles, buffers grow
				one()
			}
			allocs := testing.AllocsPerRun(500, one)
			if allocs != 0 {
				t.Errorf("%s: a message allocates %v on the Go side, want 0", name, allocs)
			}
			if e.recv < 500 || e.win.Count() == 0 || e.lastSeq != seq {
				t.Errorf("received %d (last seq %d of %d), histogram %d", e.recv, e.lastSeq, seq, e.win.Count())
			}
		})
	}
}
