//go:build linux

package steps

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
)

func hostHist(maxLate time.Duration) *report.Histogram {
	h := report.NewHistogram()
	for range 999 {
		h.Record(int64(50 * time.Microsecond))
	}
	h.Record(int64(maxLate))
	return h
}

func judged(b report.Bounds, s report.Summary, lost int64) *report.Case {
	c := &report.Case{Bounds: &b, Summary: s, Sent: 100, Delivered: 100 - lost, Lost: lost}
	c.Finalize()
	return c
}

// Only tail failures the host's own lateness accounts for are re-measured;
// anything else is the middleware's and stands.
func TestHostExplains(t *testing.T) {
	b := report.Bounds{P50: 600 * time.Microsecond, P99: 30 * time.Millisecond, Max: time.Second, MaxLost: report.Loss(0)}
	tail := report.Summary{Count: 100, P50: 142_000, P99: 39_900_000, Max: 39_900_000}
	for _, tc := range []struct {
		name string
		c    *report.Case
		host *report.Histogram
		want bool
	}{
		{"p99 failed while the host stalled 35 ms", judged(b, tail, 0), hostHist(35 * time.Millisecond), true},
		{"quiet host (5 ms late at worst)", judged(b, tail, 0), hostHist(5 * time.Millisecond), false},
		{"tails far beyond a disturbed host's stall (queueing)", judged(b, report.Summary{Count: 100, P50: 142_000, P99: 900_000_000, Max: 900_000_000}, 0), hostHist(35 * time.Millisecond), true},
		{"bound tighter than DisturbedLateness, host late by more than it", judged(report.Bounds{P99: 2 * time.Millisecond}, report.Summary{Count: 100, P50: 100_000, P99: 3_000_000}, 0), hostHist(4 * time.Millisecond), true},
		{"bound tighter than DisturbedLateness, host late by less than it", judged(report.Bounds{P99: 2 * time.Millisecond}, report.Summary{Count: 100, P50: 100_000, P99: 3_000_000}, 0), hostHist(time.Millisecond), false},
		{"p50 failed too", judged(b, report.Summary{Count: 100, P50: 2_000_000, P99: 39_900_000, Max: 39_900_000}, 0), hostHist(35 * time.Millisecond), false},
		{"a message was lost", judged(b, tail, 1), hostHist(35 * time.Millisecond), false},
		{"passing case", judged(b, report.Summary{Count: 100, P50: 142_000, P99: 1_000_000, Max: 1_000_000}, 0), hostHist(35 * time.Millisecond), false},
		{"no probe", judged(b, tail, 0), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, got := hostExplains(tc.c, tc.host)
			if got != tc.want {
				t.Fatalf("hostExplains = %v (%q), want %v; checks %v", got, why, tc.want, tc.c.Checks)
			}
			if got && (!strings.Contains(why, "p99") || !strings.Contains(why, "host woke up to")) {
				t.Fatalf("reason %q names neither the check nor the host lateness", why)
			}
		})
	}
}

// The probe samples while it runs and stops promptly.
func TestHostProbeStops(t *testing.T) {
	p := startHostProbe(context.Background())
	// A duration to sample (~50 periods), not a synchronisation: what is
	// asserted is stop's answer.
	<-time.After(50 * time.Millisecond)
	t0 := time.Now()
	h := p.stop()
	if h == nil || h.Count() == 0 {
		t.Fatalf("probe recorded nothing in 50 ms")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("stop took %v", d)
	}
}
