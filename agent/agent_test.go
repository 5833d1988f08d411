package agent_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// session is an agent running in-process on pipes.
type session struct {
	t     testing.TB
	in    *io.PipeWriter
	enc   *agentproto.Encoder
	msgs  chan *agentproto.Msg
	done  chan error
	marks *atomic.Int64
}

type countingMarker struct{ n *atomic.Int64 }

func (m countingMarker) Mark() error  { m.n.Add(1); return nil }
func (m countingMarker) Close() error { return nil }

func startSession(t testing.TB, shmDir string) *session {
	t.Helper()
	marks := new(atomic.Int64)
	s := runSession(t, &agent.Options{Board: "test", Build: "test", ShmDir: shmDir,
		OpenMarker: func(context.Context, agentproto.Marker) (agent.Marker, error) { return countingMarker{marks}, nil }})
	s.marks = marks
	t.Cleanup(func() { s.in.Close() })
	hello := s.expect(agentproto.KindHello)
	if hello.Hello.Version != agentproto.Version || hello.Hello.Board != "test" {
		t.Fatalf("hello = %+v", hello.Hello)
	}
	return s
}

// runSession runs agent.Run with opts on pipes and decodes its output
// into s.msgs (closed when the output ends); the caller closes s.in.
func runSession(t testing.TB, opts *agent.Options) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, enc: agentproto.NewEncoder(inW), msgs: make(chan *agentproto.Msg, 1024), done: make(chan error, 1)}
	go func() { s.done <- agent.Run(context.Background(), inR, outW, opts); outW.Close() }()
	go func() {
		dec := agentproto.NewDecoder(outR)
		for {
			m, err := dec.Next()
			if err != nil {
				close(s.msgs)
				return
			}
			s.msgs <- m
		}
	}()
	return s
}

// start sends a start and expects it started.
func (s *session) start(st agentproto.Start) {
	s.t.Helper()
	s.send(agentproto.NewStart(st))
	s.expect(agentproto.KindStarted)
}

// stop stops every endpoint, expects the agent's bye and its clean
// return.
func (s *session) stop() {
	s.t.Helper()
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		s.t.Error(err)
	}
}

func (s *session) send(m *agentproto.Msg) {
	s.t.Helper()
	if err := s.enc.Encode(m); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) sendRaw(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// expect returns the next message of kind, skipping windows; it fails on
// anything else or after 20 s.
func (s *session) expect(kind agentproto.Kind) *agentproto.Msg {
	s.t.Helper()
	const within = 20 * time.Second
	deadline := time.After(within)
	for {
		m := s.next(deadline, within, string(kind))
		if m.Kind == kind {
			return m
		}
		if m.Kind == agentproto.KindWindow && kind != agentproto.KindWindow {
			continue
		}
		s.t.Fatalf("got %s %+v %+v, want %s", m.Kind, m.Error, m.Final, kind)
	}
}

// next returns the agent's next message, failing when its output ends or
// deadline (within from the start of the wait) passes first; what names
// what the test waits for.
func (s *session) next(deadline <-chan time.Time, within time.Duration, what string) *agentproto.Msg {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatalf("agent output ended while waiting for %s", what)
		}
		return m
	case <-deadline:
		s.t.Fatalf("no %s within %v", what, within)
	}
	return nil
}

func (s *session) wait() error {
	s.t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(20 * time.Second):
		s.t.Fatal("agent did not return within 20s")
		return nil
	}
}

func TestMalformedInputIsAnsweredNotFatal(t *testing.T) {
	s := startSession(t, t.TempDir())
	s.sendRaw("this is not json")
	e := s.expect(agentproto.KindError)
	if e.Error.Code != agentproto.CodeMalformed || e.Error.Line != 1 {
		t.Errorf("error = %+v", e.Error)
	}
	s.sendRaw(`{"v":1,"kind":"start","start":{"endpoint":"x","role":"publisher","payload":8,"contract":{"topic":"t","max_payload":8}}}`)
	e = s.expect(agentproto.KindError)
	if e.Error.Code != agentproto.CodeInvalid || e.Error.Line != 2 {
		t.Errorf("error = %+v", e.Error)
	}
	s.send(agentproto.NewStop("nobody"))
	if e = s.expect(agentproto.KindError); e.Error.Code != agentproto.CodeUnknownEndpoint || e.Error.Endpoint != "nobody" {
		t.Errorf("error = %+v", e.Error)
	}
	s.send(&agentproto.Msg{Kind: agentproto.KindBye, Bye: &agentproto.Bye{Reason: "x"}})
	if e = s.expect(agentproto.KindError); e.Error.Code != agentproto.CodeUnexpected {
		t.Errorf("error = %+v", e.Error)
	}
	s.send(agentproto.NewStop(""))
	if b := s.expect(agentproto.KindBye); b.Bye.Reason != "stop" {
		t.Errorf("bye = %+v", b.Bye)
	}
	if err := s.wait(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// A rate whose period overflows time.Duration (1e-12 Hz: 10^21 ns) was
// accepted and the publisher ran flat out; the start is refused with the
// field and the allowed range (issue 14, item 8).
func TestOverflowingRateRefused(t *testing.T) {
	s := startSession(t, t.TempDir())
	s.sendRaw(`{"v":1,"kind":"start","start":{"endpoint":"p","role":"publisher","count":100,"payload":8,"rate_hz":1e-12,"contract":{"topic":"t","max_payload":8}}}`)
	e := s.expect(agentproto.KindError)
	if e.Error.Code != agentproto.CodeInvalid || e.Error.Line != 1 || !strings.Contains(e.Error.Message, "start.rate_hz 1e-12: want 0 (as fast as possible) or 0.001..1e+07 Hz") {
		t.Errorf("error = %+v", e.Error)
	}
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

func contract(topic string) middleware.Contract {
	return middleware.Contract{Topic: topic, MaxPayload: 256, Reliability: middleware.Reliable, Depth: 64, Transport: middleware.TransportShm}
}

func TestEOFStopsEndpointsAndLeavesNoSegments(t *testing.T) {
	dir := t.TempDir()
	s := startSession(t, dir)
	s.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "eoftest", Contract: contract("eof/t")})
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "eoftest", Contract: contract("eof/t")}))
	if e := s.expect(agentproto.KindError); e.Error.Code != agentproto.CodeDuplicateEndpoint {
		t.Errorf("duplicate start: %+v", e.Error)
	}
	s.in.Close() // the controller goes away
	f := s.expect(agentproto.KindFinal)
	if f.Final.Reason != agentproto.EndStopped || f.Final.Endpoint != "sub" {
		t.Errorf("final = %+v", f.Final)
	}
	if b := s.expect(agentproto.KindBye); b.Bye.Reason != "eof" {
		t.Errorf("bye = %+v", b.Bye)
	}
	if err := s.wait(); err != nil {
		t.Errorf("Run = %v", err)
	}
	segs, err := middleware.ListSegments(dir)
	if err != nil || len(segs) != 0 {
		t.Errorf("segments left after EOF: %+v, %v", segs, err)
	}
}

func TestStartFailureIsStructured(t *testing.T) {
	s := startSession(t, t.TempDir())
	bad := contract("bad topic with spaces")
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "p", Role: agentproto.Publisher, Payload: 8, Count: 1, Contract: bad}))
	e := s.expect(agentproto.KindError)
	if e.Error.Code != agentproto.CodeStart || e.Error.Endpoint != "p" {
		t.Errorf("error = %+v", e.Error)
	}
	s.stop()
}

func TestPublishToSubscriberInProcess(t *testing.T) {
	dir := t.TempDir()
	const n = 10000
	subS, pubS := startSession(t, dir), startSession(t, dir)
	c := contract("agent/inproc")
	marker := &agentproto.Marker{Chip: "fake", Line: "0"}
	subS.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "aproc", Contract: c, Count: n, Marker: marker, WindowNs: int64(100 * time.Millisecond)})
	pubS.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "aproc", Contract: c, Count: n, Payload: 64, Send: agentproto.SendLoan, Marker: marker})
	pf := pubS.expect(agentproto.KindFinal).Final
	sf := subS.expect(agentproto.KindFinal).Final
	if pf.Sent != n || pf.Reason != agentproto.EndCount || pf.Marks != n {
		t.Errorf("publisher final = %+v", pf)
	}
	if sf.Received != n || sf.Lost != 0 || sf.LastSeq != n || sf.Reason != agentproto.EndCount {
		t.Errorf("subscriber final = %+v", sf)
	}
	if sf.Latency == nil || sf.Latency.Count() != n {
		t.Fatalf("latency histogram count = %v", sf.Latency)
	}
	if sum := sf.Latency.Summary(); sum.P50 <= 0 || sum.Max < sum.P50 {
		t.Errorf("latency summary = %+v", sum)
	}
	if got := subS.marks.Load(); got != n {
		t.Errorf("subscriber marks = %d", got)
	}
	for _, s := range []*session{subS, pubS} {
		s.stop()
	}
	if segs, err := middleware.ListSegments(dir); err != nil || len(segs) != 0 {
		t.Errorf("segments left: %+v %v", segs, err)
	}
}

func TestPinnedPublisher(t *testing.T) {
	dir := t.TempDir()
	s := startSession(t, dir)
	cpu := 0
	s.start(agentproto.Start{Endpoint: "p", Role: agentproto.Publisher, Domain: "pin", Contract: contract("pin/t"),
		Payload: 64, Count: 100, CPU: &cpu, RateHz: 10000, WindowNs: int64(20 * time.Millisecond)})
	f := s.expect(agentproto.KindFinal).Final
	if f.Sent != 100 || f.Reason != agentproto.EndCount {
		t.Errorf("final = %+v", f)
	}
	// 100 messages at 10 kHz take ~10 ms: the pacing must not be a no-op.
	if f.DurationNs < int64(9*time.Millisecond) {
		t.Errorf("100 messages at 10kHz took %v", time.Duration(f.DurationNs))
	}
	s.stop()
}
