package latency_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// RoundTrips per round-trip case.
const RoundTrips = 1000

// Latency: payload sizes × transports × reliability × rates from
// ginkgo.config, one way, judged against the rack's bounds profile; then
// the round trip (RTT/2) of each transport at the smallest and largest
// payload up to 64 KiB.
var _ = Describe("latency", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	tc := harness.Context()
	var rc *steps.RigContext

	BeforeAll(func(ctx SpecContext) {
		var err error
		rc, err = steps.OpenRig(ctx, tc)
		Expect(err).NotTo(HaveOccurred(), "open rack %s", tc.Rack.Name)
		DeferCleanup(rc.Close)
		harness.OnFailure("rig diagnostics", rc.Diagnostics)
	}, NodeTimeout(5*time.Minute))

	for _, tr := range steps.AllTransports {
		for _, reliable := range []bool{true, false} {
			for _, size := range tc.Config.PayloadSizes {
				for _, rate := range tc.Config.RatesHz {
					if rate <= 0 {
						continue // as fast as possible is the throughput suite's
					}
					name := fmt.Sprintf("%s %s %s @ %g Hz one-way", tr, rel(reliable), steps.SizeName(int(size)), rate)
					n, limited := tc.Messages(rate)
					warm := tc.WarmUp(n)
					timeout := steps.DisturbedAttempts*time.Duration(float64(n+warm)/rate*float64(time.Second)) + time.Minute
					It(name, func(ctx SpecContext) {
						if bw := float64(size) * rate; bw > steps.BandwidthCap {
							Skip(fmt.Sprintf("%s × %g Hz = %.0f MB/s exceeds the latency sweep's %.0f MB/s cap: that is a saturation measurement (throughput suite)", size, rate, bw/1e6, steps.BandwidthCap/1e6))
						}
						ran, err := rc.MeasureJudged(ctx, name, steps.Params{Transport: tr, BestEffort: !reliable,
							Payload: int(size), RateHz: rate, Count: n, WarmUp: warm})
						if errors.Is(err, steps.ErrNoLink) {
							Skip(err.Error())
						}
						Expect(err).NotTo(HaveOccurred())
						c := ran.Case
						c.Labels = []string{labels.Latency}
						if limited {
							c.Notes = append(c.Notes, fmt.Sprintf("%d messages: the configured %d do not fit the %v case budget at %g Hz", n, tc.Config.Messages, tc.CaseBudget, rate))
						}
						Expect(harness.Record(c)).To(Succeed())
						if reliable {
							Expect(c).To(reportmatch.HaveNoLoss())
						}
						Expect(c).To(reportmatch.MeetBounds())
					}, SpecTimeout(timeout))
				}
			}
		}
	}

	for _, tr := range steps.AllTransports {
		for _, size := range rttSizes(tc.Config.PayloadSizes) {
			name := fmt.Sprintf("%s reliable %s round trip", tr, steps.SizeName(int(size)))
			It(name, func(ctx SpecContext) {
				// A rack of one board has no link; RoundTrip then falls back
				// to the controller-host ping-pong and says so.
				if _, _, _, err := rc.Route(tr); err != nil && len(tc.Rack.Boards) >= 2 {
					Skip(err.Error())
				}
				c, err := rc.RoundTrip(ctx, name, tr, true, int(size), RoundTrips)
				Expect(err).NotTo(HaveOccurred())
				c.Labels = []string{labels.Latency}
				Expect(harness.Record(c)).To(Succeed())
				Expect(c).To(reportmatch.MeetBounds())
			}, SpecTimeout(2*time.Minute))
		}
	}
})

func rel(reliable bool) string {
	if reliable {
		return "reliable"
	}
	return "best-effort"
}

// rttSizes are the smallest and the largest configured payload up to
// 64 KiB (ping-pong of bulk payloads measures copying, not latency).
func rttSizes(sizes []fixtures.ByteSize) []fixtures.ByteSize {
	var lo, hi fixtures.ByteSize
	for _, s := range sizes {
		if s > 64<<10 {
			continue
		}
		if lo == 0 || s < lo {
			lo = s
		}
		if s > hi {
			hi = s
		}
	}
	switch {
	case lo == 0:
		return nil
	case lo == hi:
		return []fixtures.ByteSize{lo}
	}
	return []fixtures.ByteSize{lo, hi}
}
