package agentproto_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
)

// fuzzDecode decodes one fuzzed line: it fails the test on an error that
// is not an *agentproto.Error and returns ok=false for a structured one,
// so each fuzz target asserts only what its kind of message adds.
func fuzzDecode(t *testing.T, line []byte) (m *agentproto.Msg, ok bool) {
	t.Helper()
	m, err := agentproto.Decode(line)
	if err != nil {
		var pe *agentproto.Error
		if !errors.As(err, &pe) {
			t.Fatalf("non-structured error %T: %v", err, err)
		}
		return nil, false
	}
	return m, true
}

// reencode encodes m and decodes it again, failing the test if either
// step fails or the kind changes.
func reencode(t *testing.T, m *agentproto.Msg) *agentproto.Msg {
	t.Helper()
	var out bytes.Buffer
	if err := agentproto.NewEncoder(&out).Encode(m); err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	m2, err := agentproto.Decode(bytes.TrimSpace(out.Bytes()))
	if err != nil {
		t.Fatalf("re-decode of %s: %v", out.Bytes(), err)
	}
	if m2.Kind != m.Kind {
		t.Fatalf("kind %s became %s", m.Kind, m2.Kind)
	}
	return m2
}

// seedEncoded adds each message's wire line to the fuzz corpus.
func seedEncoded(f *testing.F, msgs ...*agentproto.Msg) {
	f.Helper()
	var buf bytes.Buffer
	enc := agentproto.NewEncoder(&buf)
	for _, m := range msgs {
		buf.Reset()
		if err := enc.Encode(m); err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSpace(buf.Bytes()))
	}
}

// invalidCase is one mutation of a valid start that Validate must reject
// with CodeInvalid naming field.
type invalidCase struct {
	name, field string
	mod         func(*agentproto.Start)
}

// checkInvalid runs each case on a fresh start from valid (which must
// deep-copy what a case mutates) and wants an invalid error for endpoint
// whose message names the case's field.
func checkInvalid(t *testing.T, endpoint string, valid func() agentproto.Start, cases []invalidCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.mod(&s)
			err := s.Validate()
			var pe *agentproto.Error
			if !errors.As(err, &pe) || pe.Code != agentproto.CodeInvalid || pe.Endpoint != endpoint || !strings.Contains(pe.Message, tt.field) {
				t.Errorf("Validate = %v, want invalid naming %q", err, tt.field)
			}
		})
	}
}

// roundTrip encodes msgs on one stream and decodes them back, failing
// the test on an error, a changed kind or version, or anything after the
// last message.
func roundTrip(t *testing.T, msgs []*agentproto.Msg) []*agentproto.Msg {
	t.Helper()
	var buf bytes.Buffer
	enc := agentproto.NewEncoder(&buf)
	for _, m := range msgs {
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	dec := agentproto.NewDecoder(&buf)
	got := make([]*agentproto.Msg, len(msgs))
	for i, want := range msgs {
		m, err := dec.Next()
		if err != nil {
			t.Fatalf("message %d (%s): %v", i, want.Kind, err)
		}
		if m.Kind != want.Kind || m.V != agentproto.Version {
			t.Fatalf("message %d: kind %s v%d, want %s", i, m.Kind, m.V, want.Kind)
		}
		got[i] = m
	}
	if _, err := dec.Next(); err != io.EOF {
		t.Errorf("after last message: %v, want EOF", err)
	}
	return got
}
