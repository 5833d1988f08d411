package agent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// testPeers are the peer adapters this test binary was built with (the
// peers/… build tags; peer_*_test.go register them). hilrig's own
// middleware always runs the same conformance cases.
var testPeers = agent.TestPeers

// conformanceMiddlewares is hilrig plus every registered peer.
func conformanceMiddlewares() []string {
	names := []string{agentproto.MiddlewareHilrig}
	for n := range testPeers {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return names
}

// slowMarker makes a subscriber a slow reader: every callback takes 2 ms.
type slowMarker struct{}

func (slowMarker) Mark() error  { time.Sleep(2 * time.Millisecond); return nil }
func (slowMarker) Close() error { return nil }

// startPeerSession runs an agent in-process with the test peers; marker
// chip "slow" is a slowMarker, anything else a real gpio marker.
func startPeerSession(t *testing.T, shmDir string) *session {
	t.Helper()
	s := runSession(t, &agent.Options{Board: "conf", Build: "test", ShmDir: shmDir, Peers: testPeers,
		OpenMarker: func(ctx context.Context, m agentproto.Marker) (agent.Marker, error) {
			if m.Chip == "slow" {
				return slowMarker{}, nil
			}
			return gpio.Open(ctx, gpio.LineSpec{Chip: m.Chip, Line: m.Line, Consumer: "conformance"}, gpio.Mode{Kind: gpio.Toggle})
		}})
	t.Cleanup(func() {
		s.send(agentproto.NewStop(""))
		s.in.Close()
		s.wait()
	})
	s.expect(agentproto.KindHello)
	return s
}

// finals collects the finals of the named endpoints (windows skipped).
func (s *session) finals(ids ...string) map[string]*agentproto.Final {
	s.t.Helper()
	got := map[string]*agentproto.Final{}
	for len(got) < len(ids) {
		m := s.expect(agentproto.KindFinal)
		got[m.Final.Endpoint] = m.Final
	}
	return got
}

func confContract(mw, topic string, rel middleware.Reliability, depth int) middleware.Contract {
	c := middleware.Contract{Topic: topic, MaxPayload: 256, Reliability: rel, Depth: depth}
	if mw == agentproto.MiddlewareHilrig {
		c.Transport = middleware.TransportShm
	}
	return c
}

// TestPeerConformance runs the same cases on hilrig and on every peer:
// sequence numbers 1..n in order, no loss under reliable, loss counted
// exactly (received + lost = sent) under best effort with a slow reader,
// and the GPIO markers toggled on a simulated chip at the two stamping
// points (the marker-to-marker delay of every message is at least its
// stamped latency: the publisher marks before the send stamp, the
// subscriber after the receive stamp).
func TestPeerConformance(t *testing.T) {
	for _, mw := range conformanceMiddlewares() {
		t.Run(mw, func(t *testing.T) {
			t.Run("reliable", func(t *testing.T) { conformReliable(t, mw) })
			t.Run("best-effort-slow-reader", func(t *testing.T) { conformBestEffort(t, mw) })
		})
	}
}

func conformReliable(t *testing.T, mw string) {
	const n = 300
	chipName := fmt.Sprintf("conf-%s-%d", mw, os.Getpid())
	chip, err := gpiosim.Create(chipName, gpiosim.Config{Lines: 2, LineNames: []string{"TX", "RX"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chip.Remove() })
	ctx := context.Background()
	sim := kind.SimChip(chipName)
	w, err := gpio.Watch(ctx, gpio.LineSpec{Chip: sim, Line: "TX", Consumer: "scope"}, gpio.LineSpec{Chip: sim, Line: "RX", Consumer: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	dir := t.TempDir()
	s, ps := startPeerSession(t, dir), startPeerSession(t, dir)
	c := confContract(mw, "conf/rel/"+strconv.Itoa(os.Getpid()), middleware.Reliable, 8)
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Middleware: mw, Domain: "conf", Contract: c, Count: n,
		IdleTimeoutNs: int64(5 * time.Second), Marker: &agentproto.Marker{Chip: sim, Line: "RX"}}))
	st := s.expect(agentproto.KindStarted)
	if st.Started.Middleware != mw || (mw != agentproto.MiddlewareHilrig && st.Started.Peer == "") {
		t.Fatalf("started = %+v, want middleware %s with its description", st.Started, mw)
	}
	ps.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Middleware: mw, Domain: "conf", Contract: c, Count: n, Payload: 200,
		RateHz: 5000, Marker: &agentproto.Marker{Chip: sim, Line: "TX"}})
	pub, sub := ps.finals("pub")["pub"], s.finals("sub")["sub"]
	if pub.Sent != n || pub.Marks != n || pub.Timeouts != 0 {
		t.Errorf("publisher sent %d marks %d timeouts %d, want %d, %d, 0 (%+v)", pub.Sent, pub.Marks, pub.Timeouts, n, n, pub)
	}
	if sub.Received != n || sub.Lost != 0 || sub.LastSeq != n || sub.Marks != n || sub.Reason != agentproto.EndCount {
		t.Fatalf("reliable subscriber: received %d lost %d last seq %d marks %d reason %s, want %d, 0, %d, %d, count (%s)", sub.Received, sub.Lost, sub.LastSeq, sub.Marks, sub.Reason, n, n, n, sub.Error)
	}
	// The simulated scope: n edges per line; the k-th RX edge minus the
	// k-th TX edge encloses message k's stamped latency, so every quantile
	// of the marker delays is at least that of the stamped latencies
	// (order statistics; 2 % for the histograms' bucket width).
	var tx, rx []int64
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for len(tx) < n || len(rx) < n {
		var e gpio.Edge
		if err := w.ReadEdge(rctx, &e); err != nil {
			t.Fatalf("edges: %d TX and %d RX of %d: %v", len(tx), len(rx), n, err)
		}
		if e.Line == 0 {
			tx = append(tx, e.TimestampNs)
		} else {
			rx = append(rx, e.TimestampNs)
		}
	}
	marks := report.NewHistogram()
	for k := range n {
		marks.Record(rx[k] - tx[k])
	}
	lat := sub.Latency
	if lat == nil || lat.Count() != n {
		t.Fatalf("latency histogram of %v samples, want %d", lat, n)
	}
	for _, q := range []float64{0.01, 0.5, 0.9} {
		m, l := marks.ValueAtQuantile(q), lat.ValueAtQuantile(q)
		if l <= 0 || float64(m) < 0.98*float64(l) {
			t.Errorf("q%.2f: marker delay %d ns < stamped latency %d ns: the markers are not outside the stamps", q, m, l)
		}
	}
}

func conformBestEffort(t *testing.T, mw string) {
	const n = 400
	dir := t.TempDir()
	s, ps := startPeerSession(t, dir), startPeerSession(t, dir)
	c := confContract(mw, "conf/be/"+strconv.Itoa(os.Getpid()), middleware.BestEffort, 4)
	s.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Middleware: mw, Domain: "conf", Contract: c, Count: n,
		IdleTimeoutNs: int64(time.Second), Marker: &agentproto.Marker{Chip: "slow", Line: "0"}})
	ps.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Middleware: mw, Domain: "conf", Contract: c, Count: n, Payload: 128, RateHz: 20000})
	pub, sub := ps.finals("pub")["pub"], s.finals("sub")["sub"]
	if pub.Sent != n {
		t.Fatalf("publisher sent %d of %d (%+v)", pub.Sent, n, pub)
	}
	if sub.Received+sub.Lost != n || sub.Lost == 0 || sub.Received == 0 {
		t.Fatalf("best effort, slow reader: received %d + lost %d, want exactly %d with some lost (%+v)", sub.Received, sub.Lost, n, sub)
	}
	t.Logf("%s: slow reader received %d, lost %d of %d", mw, sub.Received, sub.Lost, n)
}
