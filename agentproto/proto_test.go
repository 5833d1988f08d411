package agentproto_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

func validStart() agentproto.Start {
	cpu := 1
	return agentproto.Start{
		Endpoint: "pub-1", Role: agentproto.Publisher,
		Contract: middleware.Contract{Topic: "t/x", MaxPayload: 4096, Reliability: middleware.Reliable},
		Payload:  64, RateHz: 1000, Count: 10000, Send: agentproto.SendLoan, CPU: &cpu,
		Marker: &agentproto.Marker{Chip: "sim:hilrig", Line: "0"},
	}
}

func TestRoundTrip(t *testing.T) {
	h := report.NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		h.Record(i * 1000)
	}
	msgs := []*agentproto.Msg{
		agentproto.NewHello(agentproto.Hello{Agent: "hilrig test", Board: "board-a", PID: 42}),
		agentproto.NewStart(validStart()),
		{Kind: agentproto.KindStarted, Started: &agentproto.Started{Endpoint: "pub-1"}},
		{Kind: agentproto.KindWindow, Window: &agentproto.Window{Endpoint: "sub-1", Index: 3, Received: 1000, Lost: 2, Latency: h, RSSBytes: 1 << 20}},
		{Kind: agentproto.KindFinal, Final: &agentproto.Final{Endpoint: "sub-1", Role: agentproto.Subscriber, Reason: agentproto.EndCount, Received: 10000, Latency: h}},
		agentproto.NewError(agentproto.CodeStart, "pub-1", errors.New("middleware: closed")),
		agentproto.NewStop(""),
		agentproto.NewStop("pub-1"),
		{Kind: agentproto.KindBye, Bye: &agentproto.Bye{Reason: "eof"}},
	}
	for i, got := range roundTrip(t, msgs) {
		want := msgs[i]
		switch got.Kind {
		case agentproto.KindStart:
			if !reflect.DeepEqual(got.Start.Contract, want.Start.Contract) || *got.Start.CPU != 1 || got.Start.Marker.Chip != "sim:hilrig" || got.Start.Send != agentproto.SendLoan {
				t.Errorf("start = %+v", got.Start)
			}
		case agentproto.KindWindow:
			if got.Window.Latency.Summary() != h.Summary() || got.Window.Lost != 2 {
				t.Errorf("window latency %+v, want %+v", got.Window.Latency.Summary(), h.Summary())
			}
		case agentproto.KindFinal:
			if got.Final.Latency.Count() != 1000 || got.Final.Received != 10000 {
				t.Errorf("final = %+v", got.Final)
			}
		case agentproto.KindError:
			if got.Error.Code != agentproto.CodeStart || got.Error.Endpoint != "pub-1" || got.Error.Message != "middleware: closed" {
				t.Errorf("error = %+v", got.Error)
			}
		}
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name, line string
		code       agentproto.Code
		want       string
	}{
		{"not json", `hello`, agentproto.CodeMalformed, "invalid JSON at byte 1"},
		{"truncated", `{"v":1,"kind":"stop","stop":{`, agentproto.CodeMalformed, "unexpected EOF"},
		{"unknown field", `{"v":1,"kind":"stop","stop":{},"colour":1}`, agentproto.CodeMalformed, `unknown field "colour"`},
		{"wrong type", `{"v":1,"kind":"stop","stop":{"endpoint":5}}`, agentproto.CodeMalformed, `field "stop.endpoint": want string, got JSON number`},
		{"old version", `{"v":0,"kind":"stop","stop":{}}`, agentproto.CodeVersion, "protocol version 0, this side speaks 1"},
		{"hello version", `{"v":1,"kind":"hello","hello":{"version":2,"agent":"x"}}`, agentproto.CodeVersion, "peer speaks protocol version 2"},
		{"unknown kind", `{"v":1,"kind":"dance"}`, agentproto.CodeMalformed, `unknown kind "dance"`},
		{"missing payload", `{"v":1,"kind":"start"}`, agentproto.CodeMalformed, `kind "start" without its "start" payload`},
		{"mismatched payload", `{"v":1,"kind":"stop","start":{}}`, agentproto.CodeMalformed, `kind "stop" carries a "start" payload`},
		{"trailing", `{"v":1,"kind":"stop","stop":{}} {}`, agentproto.CodeMalformed, "trailing data"},
		{"bad role", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"lurker","contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, `start.role "lurker"`},
		{"bad endpoint", `{"v":1,"kind":"start","start":{"endpoint":"a b","role":"subscriber","contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, `start.endpoint "a b"`},
		{"payload too big", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","count":1,"payload":9,"contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, "start.payload 9: want 0..contract.max_payload (8)"},
		{"publisher unbounded", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","payload":8,"contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, "needs count or duration_ns"},
		{"negative rate", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","count":1,"payload":8,"rate_hz":-1,"contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, "start.rate_hz -1"},
		// 1e-12 Hz is a period of 10^21 ns: it overflowed time.Duration
		// into a negative period and the publisher ran flat out.
		{"rate too low", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","count":1,"payload":8,"rate_hz":1e-12,"contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, "start.rate_hz 1e-12: want 0 (as fast as possible) or 0.001..1e+07 Hz"},
		{"rate too high", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","count":1,"payload":8,"rate_hz":1e300,"contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeInvalid, "start.rate_hz 1e+300: want 0 (as fast as possible) or 0.001..1e+07 Hz"},
		// wait and send are decoded once by their types (internal/kind):
		// unknown text is refused naming the allowed values.
		{"bad wait", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"subscriber","wait":"sometimes","contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeMalformed, `wait strategy "sometimes": want futex, spin, hybrid`},
		{"bad send", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"publisher","count":1,"payload":8,"send":"teleport","contract":{"topic":"t","max_payload":8}}}`, agentproto.CodeMalformed, `send path "teleport": want copy, loan`},
		{"pulse without width", `{"v":1,"kind":"start","start":{"endpoint":"e","role":"subscriber","contract":{"topic":"t","max_payload":8},"marker":{"chip":"c","line":"1","mode":"pulse"}}}`, agentproto.CodeInvalid, "pulse_width_ns"},
		{"bad histogram", `{"v":1,"kind":"window","window":{"endpoint":"e","index":0,"start_ns":0,"end_ns":0,"latency":"!!notbase64"}}`, agentproto.CodeMalformed, "histogram"},
		{"empty", ``, agentproto.CodeMalformed, "empty line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := agentproto.Decode([]byte(tc.line))
			var pe *agentproto.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Decode = %+v, %v; want *Error", m, err)
			}
			if !errors.Is(err, agentproto.ErrProtocol) {
				t.Error("not ErrProtocol")
			}
			if pe.Code != tc.code || !strings.Contains(pe.Message, tc.want) {
				t.Errorf("got %s %q, want %s containing %q", pe.Code, pe.Message, tc.code, tc.want)
			}
		})
	}
}

// TestWaitDefault: a start without "wait" is futex (the zero value), one
// with "wait":"spin" spins; the agent reads the type, not the text.
func TestWaitDefault(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  middleware.WaitStrategy
	}{{``, middleware.WaitFutex}, {`"wait":"",`, middleware.WaitFutex}, {`"wait":"spin",`, middleware.WaitSpin}, {`"wait":"hybrid",`, middleware.WaitHybrid}} {
		m, err := agentproto.Decode([]byte(`{"v":1,"kind":"start","start":{"endpoint":"e","role":"subscriber",` + tc.field + `"contract":{"topic":"t","max_payload":8}}}`))
		if err != nil || m.Start.Wait != tc.want {
			t.Errorf("%s: Decode = %v, %v; want wait %v", tc.field, m, err, tc.want)
		}
	}
	s := agentproto.Start{Endpoint: "e", Role: agentproto.Subscriber, Wait: middleware.WaitStrategy(7), Contract: middleware.Contract{Topic: "t", MaxPayload: 8}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "start.wait") {
		t.Errorf("Validate of wait 7 = %v, want a start.wait error", err)
	}
}

func TestDecoderRecoversAfterBadLines(t *testing.T) {
	long := strings.Repeat("x", agentproto.MaxLine+10)
	in := "garbage\n\n" + long + "\n" + `{"v":1,"kind":"stop","stop":{}}` + "\r\n" + `{"v":1,"kind":"stop","stop":{"endpoint":"e"}}`
	dec := agentproto.NewDecoder(strings.NewReader(in))
	var pe *agentproto.Error
	if _, err := dec.Next(); !errors.As(err, &pe) || pe.Line != 1 || string(dec.Last()) != "garbage" {
		t.Fatalf("line 1: %v, Last %q", err, dec.Last())
	}
	if _, err := dec.Next(); !errors.As(err, &pe) || pe.Line != 3 || !strings.Contains(pe.Message, "longer than") || len(dec.Last()) != 0 {
		t.Fatalf("line 3: %v, Last of %d bytes", err, len(dec.Last()))
	}
	m, err := dec.Next()
	if err != nil || m.Kind != agentproto.KindStop || m.Stop.Endpoint != "" || string(dec.Last()) != `{"v":1,"kind":"stop","stop":{}}` {
		t.Fatalf("line 4: %+v %v, Last %q", m, err, dec.Last())
	}
	m, err = dec.Next()
	if err != nil || m.Stop.Endpoint != "e" {
		t.Fatalf("line 5 (no newline): %+v %v", m, err)
	}
	if _, err := dec.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	h := report.NewHistogram()
	h.Record(12345)
	seedEncoded(f,
		agentproto.NewHello(agentproto.Hello{Agent: "a"}), agentproto.NewStart(validStart()), agentproto.NewStop("x"),
		&agentproto.Msg{Kind: agentproto.KindWindow, Window: &agentproto.Window{Endpoint: "e", Latency: h}})
	f.Add([]byte(`{"v":1,"kind":"start","start":{"endpoint":"e","role":"subscriber","contract":{"topic":"t","max_payload":8},"cpu":-1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		// A message that decodes re-encodes and decodes to the same kind.
		if m, ok := fuzzDecode(t, line); ok {
			reencode(t, m)
		}
	})
}
