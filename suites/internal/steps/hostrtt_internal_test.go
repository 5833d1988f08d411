package steps

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy/deploytest"
	"github.com/hilrig/hilrig/fixtures"
)

// The controller-host fallback runs bench's ping-pong against a child of
// the real hilrig binary and returns the one-way percentiles of every
// timed round trip, ordered, with jitter p99 − p50; an unknown transport
// is refused before anything starts.
func TestHostPingPong(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hilrig and runs a ping-pong")
	}
	bin, _, err := deploytest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, spec := range []hostPingPong{
		{Transport: fixtures.Shm, Payload: 64, RoundTrips: 200, Warmup: 20},
		{Transport: fixtures.Shm, Send: agentproto.SendLoan, Payload: 64, RoundTrips: 200, Warmup: 20},
	} {
		s, err := spec.run(ctx, bin)
		if err != nil {
			t.Fatalf("%s/%s: %v", spec.Transport, spec.Send, err)
		}
		if s.Count != 200 || s.Min <= 0 || s.P50 < s.Min || s.P99 < s.P50 || s.Max < s.P99 || s.Jitter != s.P99-s.P50 {
			t.Errorf("%s/%s: summary %+v: want 200 ordered one-way percentiles, jitter p99 − p50", spec.Transport, spec.Send, s)
		}
	}
	if _, err := (hostPingPong{Transport: "can", Payload: 64}).run(ctx, bin); err == nil {
		t.Error("transport \"can\" accepted")
	}
}
