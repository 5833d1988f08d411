package scope_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Scope: the latency cases of the rack's links with markers on. The
// scope times the sender's tx marker edge to the receiver's rx marker
// edge; its mean is compared with the software one-way mean of the same
// messages and the difference asserted within the rack's scope tolerance.
// On the sim rack the scope is the SCPI simulator on loopback, fed by the
// simulated GPIO chip the agents toggle, reached over a real socket. Where
// the scope can fetch per-message delays, p50 and p99 are compared too
// (and the KS distance reported); a last case does that with a
// gpio-capture probing the sim chip's marker lines.
var _ = Describe("scope", Ordered, ContinueOnFailure, Label(labels.Latency, labels.NeedsScope), func() {
	tc := harness.Context()
	env := steps.Setup(labels.Latency, labels.NeedsScope)
	var scope *steps.Scope

	BeforeAll(func(ctx SpecContext) {
		// The rack claims a scope: failing to reach it fails, never skips.
		var err error
		scope, err = steps.OpenScope(ctx, env)
		Expect(err).NotTo(HaveOccurred(), "rack %s claims a scope", tc.Rack.Name)
		DeferCleanup(scope.Close)
	}, NodeTimeout(time.Minute))

	rate := 0.0
	for _, r := range tc.Config.RatesHz {
		if r > 0 {
			rate = r
			break
		}
	}
	for _, tr := range []steps.Path{steps.ShmCopy, steps.UDP} {
		for _, size := range tc.Config.PayloadSizes {
			name := fmt.Sprintf("%s reliable %s @ %g Hz markers on, scope vs software", tr, steps.SizeName(int(size)), rate)
			n, _ := tc.Messages(rate)
			It(name, func(ctx SpecContext) {
				if rate == 0 {
					Skip("ginkgo.config has no positive rate: scope cases need a paced flow")
				}
				if bw := float64(size) * rate; bw > steps.BandwidthCap {
					Skip(fmt.Sprintf("%s × %g Hz = %.0f MB/s exceeds the %.0f MB/s cap of paced latency cases", size, rate, bw/1e6, steps.BandwidthCap/1e6))
				}
				from, to, _, err := steps.Route(tc.Rack, tr)
				if errors.Is(err, steps.ErrNoLink) {
					Skip(err.Error())
				}
				Expect(err).NotTo(HaveOccurred())
				src, dst, th, err := scope.Channels(from, to)
				Expect(err).NotTo(HaveOccurred(), "wiring")
				Expect(scope.Arm(ctx, src, dst, th)).To(Succeed())
				ran, err := steps.Measure(ctx, env, name, steps.Params{Path: tr, Payload: int(size), RateHz: rate,
					Count: n, Markers: true, Judge: steps.JudgeScope})
				Expect(err).NotTo(HaveOccurred())
				if scope.Capture != nil {
					scope.SettleCapture(ctx, 2*int(n)) // toggle markers: one edge per message per line
				}
				c := ran.Case
				_, err = scope.Reading(ctx, c, src, dst, int64(n/2))
				Expect(err).NotTo(HaveOccurred(), "read scope statistics")
				if c.Failure != "" {
					// Refused (implausible, reset by someone else, no
					// result): recorded with the reason, never a number.
					Expect(harness.Record(c)).To(Succeed())
					Fail(c.Failure)
				}
				_, err = scope.Distribution(ctx, c) // quantiles + KS where the scope fetches per-message delays
				Expect(err).NotTo(HaveOccurred())
				steps.RecordEdges(env, scope, c) // record: on, a gpio-capture: the markers' edges
				// This suite judges agreement (steps.JudgeScope); latency is
				// the latency suite's.
				if b := c.Bounds; b != nil && b.ScopeTolerance == 0 {
					c.Add(report.Noted("scope spec", "bounds profile sets no scope_tolerance: the difference is reported, not judged"))
				}
				c.Add(report.Noted("scope spec", "judged on scope agreement and loss only; the latency bounds are the latency suite's (markers add their own cost)"))
				c.Add(report.Noted("scope spec", "markers toggle per message: the scope times rising→rising edges (every other message); the software mean is over all messages",
					"no warm-up: the scope and the software see the same messages"))
				Expect(harness.Record(c)).To(Succeed())
				Expect(c.Scope.Scope.MeanNs).NotTo(BeNil(), "the scope reported no mean: %s", c.Scope.Note)
				if c.Scope.ToleranceNs > 0 {
					Expect(c.Scope.Agree).To(BeTrue(), "scope mean %s vs software mean %s: Δ %s beyond ±%s (%s)",
						report.FormatNs(int64(*c.Scope.Scope.MeanNs)), report.FormatNs(int64(c.Scope.SoftwareMeanNs)),
						report.FormatNs(int64(*c.Scope.DifferenceNs)), report.FormatNs(c.Scope.ToleranceNs), c.DistributionLine())
				}
				Expect(c).To(reportmatch.MeetBounds())
			}, SpecTimeout(2*time.Minute))
		}
	}

	// A capture board as ground truth (scopes/gpiocap): on the sim rack a
	// passive probe of the simulated marker lines, in this process, with
	// kernel-style edge timestamps (CLOCK_MONOTONIC) and every message's
	// delay — so the software distribution is compared, not only its mean.
	name := fmt.Sprintf("%s reliable 64B @ %g Hz markers on, gpio-capture vs software distribution", steps.ShmCopy, rate)
	n, _ := tc.Messages(rate)
	It(name, func(ctx SpecContext) {
		if rate == 0 {
			Skip("ginkgo.config has no positive rate: scope cases need a paced flow")
		}
		if scope.Capture != nil {
			Skip("the rack's scope is a gpio-capture: the cases above already compare distributions")
		}
		from, to, _, err := steps.Route(tc.Rack, steps.ShmCopy)
		if errors.Is(err, steps.ErrNoLink) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		capture, err := steps.OpenProbeCapture(ctx, env, from, to)
		if errors.Is(err, steps.ErrNoCapture) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(capture.Close)
		Expect(capture.Arm(ctx, 1, 2, 0)).To(Succeed())
		ran, err := steps.Measure(ctx, env, name, steps.Params{Path: steps.ShmCopy, Payload: 64, RateHz: rate, Count: n, Markers: true,
			Judge: steps.JudgeScope})
		Expect(err).NotTo(HaveOccurred())
		capture.SettleCapture(ctx, 2*int(n))
		st, err := capture.Instrument.ReadStats(ctx)
		Expect(err).NotTo(HaveOccurred())
		c := ran.Case
		c.Scope = capture.Compare(st, 1, 2)
		dist, err := capture.Distribution(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		steps.RecordEdges(env, capture, c) // record: on: the markers' edges beside the case's recording
		c.Add(report.Noted("scope spec", "judged on scope agreement (mean, p50, p99 within scope_tolerance) and loss; KS distance reported, not judged",
			"toggle markers: the capture pairs both edges, one delay per message, as the software samples are"))
		Expect(harness.Record(c)).To(Succeed())
		Expect(dist).NotTo(BeNil(), "the capture fetches per-message delays")
		p := capture.Capture.Pairing()
		// Misaligned pairs would make the comparison meaningless: every
		// edge must be paired and none lost or merged.
		Expect(p.Clean()).To(BeTrue(), "gpio-capture pairing is not clean: %s", p)
		Expect(p.Delays).To(Equal(int(n)), "one delay per message: %s", p)
		if c.Scope.ToleranceNs > 0 {
			Expect(c.Scope.Agree).To(BeTrue(), "capture mean vs software mean: %s", c.Scope.Note)
			Expect(dist.Agree).To(BeTrue(), dist.Explanation)
		}
		Expect(c).To(reportmatch.MeetBounds())
	}, SpecTimeout(2*time.Minute))
})
