package agent

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// ratePeriod never yields a negative or overflowed period: 1 s / 1e-12 Hz
// = 10^21 ns converted to a negative time.Duration, and the publisher ran
// flat out while labelled 1e-12 Hz (issue 14, item 8).
func TestRatePeriod(t *testing.T) {
	for _, tc := range []struct {
		hz   float64
		want time.Duration // -1: refused
	}{
		{0, 0},
		{agentproto.MinRateHz, 1000 * time.Second},
		{1000, time.Millisecond},
		{agentproto.MaxRateHz, 100 * time.Nanosecond},
		{1e-12, -1},
		{1e300, -1},
		{-1, -1},
		{math.NaN(), -1},
		{math.Inf(1), -1},
		{math.Inf(-1), -1},
		{math.SmallestNonzeroFloat64, -1},
	} {
		got, err := ratePeriod(tc.hz)
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("ratePeriod(%v) = %v, want an error", tc.hz, got)
		case tc.want < 0 && !strings.Contains(err.Error(), "want 0 (as fast as possible) or 0.001..1e+07 Hz"):
			t.Errorf("ratePeriod(%v) error %q does not state the range", tc.hz, err)
		case tc.want >= 0 && (err != nil || got != tc.want):
			t.Errorf("ratePeriod(%v) = %v, %v; want %v", tc.hz, got, err, tc.want)
		}
	}
}

// An endpoint started in-process, past Decode, still refuses a rate whose
// period would overflow, with an error naming the field and the range,
// before it opens anything.
func TestEndpointRefusesOverflowingRate(t *testing.T) {
	var out bytes.Buffer
	a := &agent{enc: agentproto.NewEncoder(&out)}
	s := agentproto.Start{Endpoint: "p", Role: agentproto.Publisher, Payload: 8, Count: 10, RateHz: 1e-12,
		Contract: middleware.Contract{Topic: "t", MaxPayload: 64, Transport: middleware.TransportIntra}}
	e := newEndpoint(a, s)
	e.run(context.Background())
	first, _, _ := bytes.Cut(out.Bytes(), []byte("\n"))
	m, err := agentproto.Decode(first)
	if err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if m.Kind != agentproto.KindError || m.Error.Code != agentproto.CodeInvalid || m.Error.Endpoint != "p" ||
		!strings.Contains(m.Error.Message, "start.rate_hz 1e-12: want 0 (as fast as possible) or 0.001..1e+07 Hz") {
		t.Errorf("endpoint reported %+v %+v, want an invalid-rate error", m, m.Error)
	}
	if e.sent != 0 {
		t.Errorf("sent %d messages", e.sent)
	}
}
