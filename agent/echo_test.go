package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// collect returns the windows and the final of endpoint, failing on an
// error message or after 30 s. Other endpoints' messages are skipped.
func (s *session) collect(endpoint string) ([]agentproto.Window, *agentproto.Final) {
	s.t.Helper()
	var wins []agentproto.Window
	const within = 30 * time.Second
	deadline := time.After(within)
	for {
		m := s.next(deadline, within, endpoint+"'s final")
		switch {
		case m.Kind == agentproto.KindError:
			s.t.Fatalf("agent error: %+v", m.Error)
		case m.Kind == agentproto.KindWindow && m.Window.Endpoint == endpoint:
			wins = append(wins, *m.Window)
		case m.Kind == agentproto.KindFinal && m.Final.Endpoint == endpoint:
			return wins, m.Final
		}
	}
}

func roundTripStarts(ping, reply middleware.Contract, n uint64, rate float64) (pinger, echo agentproto.Start) {
	pinger = agentproto.Start{Endpoint: "ping", Role: agentproto.Pinger, Domain: "rtt", Contract: ping, Payload: 64,
		Count: n, WarmUp: 10, RateHz: rate, WindowNs: int64(20 * time.Millisecond), Echo: &agentproto.EchoSpec{Reply: reply}}
	echo = agentproto.Start{Endpoint: "echo", Role: agentproto.Echo, Domain: "rtt", Contract: ping,
		WindowNs: int64(20 * time.Millisecond), Echo: &agentproto.EchoSpec{Reply: reply}}
	return pinger, echo
}

// checkPinger: every ping answered, matched by sequence, RTT recorded on
// the pinger's clock in both the windows and the final.
func checkPinger(t *testing.T, n uint64, wins []agentproto.Window, f *agentproto.Final) {
	t.Helper()
	if f.Reason != agentproto.EndCount || f.Sent != n || f.Received != n || f.Lost != 0 || f.LastSeq != n {
		t.Errorf("pinger final = %+v", f)
	}
	if f.Latency == nil || f.Latency.Count() != int64(n-10) {
		t.Fatalf("pinger RTT histogram count = %v, want %d (warm-up excluded)", f.Latency, n-10)
	}
	if sum := f.Latency.Summary(); sum.Min <= 0 || sum.P50 <= 0 || sum.Max < sum.P50 {
		t.Errorf("RTT summary = %+v", sum)
	}
	var recv, sent, lost uint64
	var rtts int64
	for _, w := range wins {
		recv, sent, lost = recv+w.Received, sent+w.Sent, lost+w.Lost
		if w.Latency != nil {
			rtts += w.Latency.Count()
		}
	}
	if recv != n || sent != n || lost != 0 || rtts != int64(n-10) {
		t.Errorf("windows: received %d sent %d lost %d RTT samples %d, want %d %d 0 %d", recv, sent, lost, rtts, n, n, n-10)
	}
}

// TestPingerEchoShmAcrossAgents: pinger and echo in two agents (two
// "boards") over shared memory, back to back with one ping in flight.
func TestPingerEchoShmAcrossAgents(t *testing.T) {
	dir := t.TempDir()
	const n = 500
	echoS, pingS := startSession(t, dir), startSession(t, dir)
	ps, es := roundTripStarts(contract("rtt/ping"), contract("rtt/pong"), n, 0)
	es.Marker = &agentproto.Marker{Chip: "fake", Line: "0"}
	echoS.start(es)
	pingS.start(ps)
	wins, pf := pingS.collect("ping")
	checkPinger(t, n, wins, pf)
	echoS.send(agentproto.NewStop("echo"))
	_, ef := echoS.collect("echo")
	if ef.Received != n || ef.Sent != n || ef.Lost != 0 || ef.Reason != agentproto.EndStopped {
		t.Errorf("echo final = %+v", ef)
	}
	if ef.Latency != nil {
		t.Errorf("echo reports latency %v: it has no clock of the pinger", ef.Latency)
	}
	if got := echoS.marks.Load(); got != n {
		t.Errorf("echo marks = %d, want %d", got, n)
	}
	for _, s := range []*session{echoS, pingS} {
		s.stop()
	}
	if segs, err := middleware.ListSegments(dir); err != nil || len(segs) != 0 {
		t.Errorf("segments left: %+v %v", segs, err)
	}
}

// TestPingerEchoIntraOneAgent: both ends in one agent over the
// intra-process path, paced pings.
func TestPingerEchoIntraOneAgent(t *testing.T) {
	s := startSession(t, t.TempDir())
	const n = 200
	ping, reply := contract("rtt/iping"), contract("rtt/ipong")
	ping.Transport, reply.Transport = middleware.TransportIntra, middleware.TransportIntra
	ps, es := roundTripStarts(ping, reply, n, 2000)
	es.Count = n // the echo ends by itself after the last ping (then lingers)
	s.start(es)
	s.start(ps)
	wins, pf := s.collect("ping")
	checkPinger(t, n, wins, pf)
	// 200 pings at 2 kHz take ~100 ms: the pacing must not be a no-op
	// (back to back they take a few ms). DurationNs runs from the first
	// reply to the last, so a stall before the first reply shortens it:
	// the bound is loose.
	if pf.DurationNs < int64(50*time.Millisecond) {
		t.Errorf("200 pings at 2 kHz answered within %v", time.Duration(pf.DurationNs))
	}
	s.send(agentproto.NewStop(""))
	_, ef := s.collect("echo")
	if ef.Received != n || ef.Sent != n || ef.LastSeq != n {
		t.Errorf("echo final = %+v", ef)
	}
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Error(err)
	}
}

// startLonelyPinger starts, in a session of its own, a best-effort
// pinger on topic (replies on topic+"-r") bound to count pings, each
// waiting timeout for a reply, with no echo anywhere to answer it.
func startLonelyPinger(t *testing.T, topic string, count uint64, timeout time.Duration) *session {
	t.Helper()
	s := startSession(t, t.TempDir())
	ping, reply := contract(topic), contract(topic+"-r")
	ping.Reliability = middleware.BestEffort
	ps, _ := roundTripStarts(ping, reply, count, 0)
	ps.Echo.ReplyTimeoutNs = int64(timeout)
	s.start(ps)
	return s
}

// TestPingerWithoutEchoCountsEveryPingLost: no echo, so every ping times
// out and is lost; the pinger still ends (by count) and records nothing.
func TestPingerWithoutEchoCountsEveryPingLost(t *testing.T) {
	s := startLonelyPinger(t, "rtt/lonely", 5, 20*time.Millisecond)
	_, f := s.collect("ping")
	if f.Sent != 5 || f.Received != 0 || f.Lost != 5 || f.Reason != agentproto.EndCount {
		t.Errorf("final = %+v", f)
	}
	if f.Latency != nil && f.Latency.Count() != 0 {
		t.Errorf("RTT recorded without replies: %d", f.Latency.Count())
	}
	s.stop()
}

// TestPingerDurationLosesNothingInFlight: a pinger bounded by duration
// still takes the reply to its last ping: ending on time is not loss.
func TestPingerDurationLosesNothingInFlight(t *testing.T) {
	dir := t.TempDir()
	echoS, pingS := startSession(t, dir), startSession(t, dir)
	ps, es := roundTripStarts(contract("rtt/dping"), contract("rtt/dpong"), 0, 0)
	ps.DurationNs, ps.WarmUp = int64(200*time.Millisecond), 0
	echoS.start(es)
	pingS.start(ps)
	_, f := pingS.collect("ping")
	if f.Reason != agentproto.EndDuration || f.Sent == 0 || f.Received != f.Sent || f.Lost != 0 {
		t.Errorf("pinger final = %+v", f)
	}
	if f.Latency == nil || uint64(f.Latency.Count()) != f.Received {
		t.Errorf("RTT samples %v, want %d", f.Latency, f.Received)
	}
	echoS.send(agentproto.NewStop("echo"))
	if _, ef := echoS.collect("echo"); ef.Received != f.Sent || ef.Sent != f.Sent {
		t.Errorf("echo final = %+v, pinger sent %d", ef, f.Sent)
	}
	for _, s := range []*session{echoS, pingS} {
		s.stop()
	}
}

// TestPinnedPinger: a pinger pinned to CPU 0 (send loop and reply
// receiver) still gets every reply.
func TestPinnedPinger(t *testing.T) {
	s := startSession(t, t.TempDir())
	ping, reply := contract("rtt/pin"), contract("rtt/pin-r")
	ping.Transport, reply.Transport = middleware.TransportIntra, middleware.TransportIntra
	ps, es := roundTripStarts(ping, reply, 100, 0)
	cpu := 0
	ps.CPU = &cpu
	s.start(es)
	s.start(ps)
	wins, pf := s.collect("ping")
	checkPinger(t, 100, wins, pf)
	s.send(agentproto.NewStop(""))
	s.collect("echo")
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Error(err)
	}
}

// TestPingerWithoutEchoEndsBounded: with no echo, a pinger bound to many
// pings does not wait out a reply timeout for each (CI: a ping-pong whose
// replies could not come waited 2 s × 2000): after 15 unanswered pings and
// no reply at all it ends with an error saying so, and what it sent stays
// counted — sent and lost.
func TestPingerWithoutEchoEndsBounded(t *testing.T) {
	s := startLonelyPinger(t, "rtt/lonely2", 100000, 10*time.Millisecond)
	var f *agentproto.Final
	deadline := time.After(30 * time.Second)
	for f == nil {
		select {
		case m := <-s.msgs:
			if m.Kind == agentproto.KindFinal && m.Final.Endpoint == "ping" {
				f = m.Final
			}
		case <-deadline:
			t.Fatal("no final of the lonely pinger within 30 s")
		}
	}
	if f.Reason != agentproto.EndError || !strings.Contains(f.Error, "none of the first 15 pings was answered") {
		t.Errorf("final reason %s error %q, want an error: none of the first 15 pings was answered", f.Reason, f.Error)
	}
	if f.Sent != 15 || f.Lost != 15 || f.Received != 0 {
		t.Errorf("final sent %d lost %d received %d, want 15 15 0", f.Sent, f.Lost, f.Received)
	}
}
