package latency_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
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
	env := steps.Setup(labels.Latency)

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
						ran, err := steps.MeasureJudged(ctx, env, name, steps.Params{Path: tr, BestEffort: !reliable,
							Payload: int(size), RateHz: rate, Count: n, WarmUp: warm})
						if errors.Is(err, steps.ErrNoLink) {
							Skip(err.Error())
						}
						Expect(err).NotTo(HaveOccurred())
						c := ran.Case
						if limited {
							c.Add(report.Noted("latency spec", fmt.Sprintf("%d messages: the configured %d do not fit the %v case budget at %g Hz", n, tc.Config.Messages, tc.CaseBudget, rate)))
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

	// The same flow idle and with one busy thread per CPU on the
	// subscriber's board: the seed documents quote latency "under load";
	// this measures it. The loaded case is reported with the loaded/idle
	// ratios, not judged (the rack states no loaded bounds); what is
	// asserted is what the load must not break — reliable delivery — and
	// that the load really ran, without which the ratio means nothing.
	underLoad := "shm-copy reliable 1KiB @ 1000 Hz one-way under CPU load"
	It(underLoad, func(ctx SpecContext) {
		const n, warm = 2000, 100
		u, err := steps.MeasureUnderLoad(ctx, env, underLoad, steps.Params{Path: steps.ShmCopy, Payload: 1024, RateHz: 1000,
			Count: n, WarmUp: warm})
		if errors.Is(err, steps.ErrNoLink) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		ic, lc := u.Idle.Case, u.Loaded.Case
		for _, c := range []*report.Case{ic, lc} {
			Expect(harness.Record(c)).To(Succeed())
		}
		for _, c := range []*report.Case{ic, lc} {
			Expect(c).To(reportmatch.HaveNoLoss(), c.Name)
			Expect(c.Sent).To(Equal(int64(n+warm)), "%s: messages sent", c.Name)
			Expect(c.Delivered).To(Equal(c.Sent), "%s: every message delivered", c.Name)
		}
		rep := u.Load.Load
		Expect(rep.Threads).To(Equal(u.Threads), "load threads")
		Expect(rep.Threads).To(BeNumerically(">=", 1), "load threads")
		Expect(float64(rep.CPUNs)).To(BeNumerically(">=", steps.MinLoadShare*float64(rep.Threads)*float64(rep.WallNs)),
			"load on %s consumed %v of CPU over %v with %d threads (%.0f%% of its cores, want ≥ %.0f%%): starved, the loaded figures do not show the board under this load",
			u.Board, time.Duration(rep.CPUNs), time.Duration(rep.WallNs), rep.Threads, 100*u.Share, 100*steps.MinLoadShare)
		Expect(lc.Bounds).To(BeNil(), "the loaded case is reported, not judged")
		Expect(lc.Notes).To(ContainElement(ContainSubstring(steps.NoteLoadedUnbounded)))
		Expect(lc.Failure).To(BeEmpty())
		Expect(ic).To(reportmatch.MeetBounds())
		AddReportEntry("under load", fmt.Sprintf("p50 ×%.2f, p99 ×%.2f (loaded/idle), load %d threads at %.0f%% of their cores",
			u.P50Ratio, u.P99Ratio, rep.Threads, 100*u.Share))
	}, SpecTimeout(time.Minute))

	for _, tr := range steps.AllTransports {
		for _, size := range rttSizes(tc.Config.PayloadSizes) {
			name := fmt.Sprintf("%s reliable %s round trip", tr, steps.SizeName(int(size)))
			It(name, func(ctx SpecContext) {
				// A rack of one board has no link; RoundTrip then falls back
				// to the controller-host ping-pong and says so.
				if _, _, _, err := steps.Route(tc.Rack, tr); err != nil && len(tc.Rack.Boards) >= 2 {
					Skip(err.Error())
				}
				c, err := steps.RoundTrip(ctx, env, name, tr, true, int(size), RoundTrips)
				Expect(err).NotTo(HaveOccurred())
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
