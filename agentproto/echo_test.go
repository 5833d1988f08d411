package agentproto_test

import (
	"bytes"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

func validPinger() agentproto.Start {
	c := middleware.Contract{Topic: "rt/ping", MaxPayload: 64, Reliability: middleware.Reliable}
	r := c
	r.Topic = "rt/reply"
	return agentproto.Start{Endpoint: "ping", Role: agentproto.Pinger, Contract: c, Payload: 64, Count: 100,
		Echo: &agentproto.EchoSpec{Reply: r}}
}

func TestEchoStartValidate(t *testing.T) {
	echo := validPinger()
	echo.Role, echo.Payload, echo.Count = agentproto.Echo, 0, 0
	for _, ok := range []agentproto.Start{validPinger(), echo} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%s: %v", ok.Role, err)
		}
	}
	checkInvalid(t, "ping", validPinger, []invalidCase{
		{"no echo spec", "start.echo", func(s *agentproto.Start) { s.Echo = nil }},
		{"echo spec on a publisher", "start.echo", func(s *agentproto.Start) { s.Role = agentproto.Publisher }},
		{"no reply topic", "start.echo.reply.topic", func(s *agentproto.Start) { s.Echo.Reply.Topic = "" }},
		{"reply on the ping topic", "start.echo.reply.topic", func(s *agentproto.Start) { s.Echo.Reply.Topic = s.Contract.Topic }},
		{"reply smaller than ping", "start.echo.reply.max_payload", func(s *agentproto.Start) { s.Echo.Reply.MaxPayload = 32 }},
		{"contract too small", "start.contract.max_payload", func(s *agentproto.Start) {
			s.Contract.MaxPayload, s.Echo.Reply.MaxPayload, s.Payload = 8, 8, 8
		}},
		{"ping too small", "start.payload", func(s *agentproto.Start) { s.Payload = 15 }},
		{"pinger without end", "count or duration_ns", func(s *agentproto.Start) { s.Count = 0 }},
		{"negative reply timeout", "reply_timeout_ns", func(s *agentproto.Start) { s.Echo.ReplyTimeoutNs = -1 }},
		{"unknown role", "start.role", func(s *agentproto.Start) { s.Role = "mirror" }},
	})
}

func TestEchoStartRoundTrip(t *testing.T) {
	s := validPinger()
	s.Echo.ReplyTimeoutNs = 5e8
	s.Echo.Reply.UDP.Listen = "10.0.0.1:2000"
	var buf bytes.Buffer
	if err := agentproto.NewEncoder(&buf).Encode(agentproto.NewStart(s)); err != nil {
		t.Fatal(err)
	}
	m, err := agentproto.NewDecoder(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	g := m.Start
	if g.Role != agentproto.Pinger || g.Echo == nil || g.Echo.Reply.Topic != "rt/reply" || g.Echo.ReplyTimeoutNs != 5e8 || g.Echo.Reply.UDP.Listen != "10.0.0.1:2000" {
		t.Errorf("decoded start = %+v echo %+v", g, g.Echo)
	}
}

// FuzzEchoDecode: start lines of the round-trip roles decode to a valid
// start or a structured error, and a decoded one re-encodes to the same.
func FuzzEchoDecode(f *testing.F) {
	seedEncoded(f, agentproto.NewStart(validPinger()))
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"e","role":"echo","contract":{"topic":"t","max_payload":16},"echo":{"reply":{"topic":"t","max_payload":16}}}}`))
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"e","role":"pinger","payload":16,"count":1,"contract":{"topic":"a","max_payload":16},"echo":{"reply":{"topic":"b","max_payload":1},"reply_timeout_ns":-5}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, ok := fuzzDecode(t, line)
		if !ok || m.Kind != agentproto.KindStart {
			return
		}
		if (m.Start.Role == agentproto.Pinger || m.Start.Role == agentproto.Echo) && m.Start.Echo == nil {
			t.Fatalf("a %s start without its reply contract decoded", m.Start.Role)
		}
		reencode(t, m)
	})
}
