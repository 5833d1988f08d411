package reaction_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// imuExample is the example program the stall and crash specs drive: its
// -stall-every flag is what they inject.
const imuExample = "./dut/examples/imu"

// Reaction: every device under test of the rack (duts:) fed its stimuli
// and judged against its bounds; on the example IMU controller, an
// injected stall that must be caught and a crash that must be restarted
// and counted. A ROS 2 program (the C example on Cyclone DDS) is skipped,
// saying why, where Cyclone DDS's idlc, cc or development files are not
// installed.
var _ = Describe("reaction", Ordered, ContinueOnFailure, Label(labels.Reaction), func() {
	env := steps.Setup(labels.Reaction)
	tc := harness.Context()
	// idle holds each program's case without background traffic, the
	// reference of its case under the mix (Ordered: the idle spec runs
	// first).
	idle := map[string]*report.Case{}

	for _, d := range tc.Rack.DUTs {
		name := d.Name + " reaction " + d.Correlation.Input + " → " + d.Correlation.Output
		It(name, func(ctx SpecContext) {
			p, err := steps.StartDUT(ctx, env, d.Name, nil)
			if errors.Is(err, dut.ErrToolMissing) {
				Skip(err.Error()) // the C example on Cyclone DDS without its tools
			}
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Stop)
			c, err := steps.Reaction(ctx, env, p, name, dut.MeasureOptions{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			idle[d.Name] = c
			expectWithinBounds(&d, c)
			if d.Correlation.GroundTruth != "" {
				Expect(c.Extra).To(HaveKey(report.ExtraDUTGroundTruthP50), "no GPIO ground truth")
				AddReportEntry(name, fmt.Sprintf("software − GPIO p50: %s", report.FormatNs(int64(c.Extra[report.ExtraDUTGroundTruthDif]))))
			}
		}, SpecTimeout(3*time.Minute))
	}

	for _, d := range tc.Rack.DUTs {
		name := d.Name + " reaction under the background traffic mix"
		It(name, func(ctx SpecContext) {
			p, err := steps.StartDUT(ctx, env, d.Name, nil)
			if errors.Is(err, dut.ErrToolMissing) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Stop)
			c, err := steps.ReactionUnderMix(ctx, env, p, name, idle[d.Name])
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			// Not judged (the idle case is); it must still have answered.
			Expect(c.Delivered).To(BeNumerically(">", 0), "no answer under the mix")
			if ref := idle[d.Name]; ref != nil {
				AddReportEntry(name, fmt.Sprintf("p50 %s idle → %s under the mix", report.FormatNs(ref.Summary.P50), report.FormatNs(c.Summary.P50)))
			}
		}, SpecTimeout(3*time.Minute))
	}

	for _, d := range tc.Rack.DUTs {
		if d.Build != imuExample {
			continue
		}
		name := d.Name + " with a 5 ms stall every 5th message"
		It(name, func(ctx SpecContext) {
			// The kernel trace the breach keeps: the rack claims no
			// tracing, so without it (not root, no tracefs) the stall is
			// still judged and the report says why there is no snapshot.
			tr, trErr := steps.ArmDUTTrace()
			if trErr == nil {
				DeferCleanup(tr.Close)
			} else {
				AddReportEntry(name, "no kernel trace: "+trErr.Error())
				tr = nil
			}
			p, err := steps.StartDUT(ctx, env, d.Name, tr, "-stall-every", "5")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Stop)
			c, err := steps.Reaction(ctx, env, p, name, dut.MeasureOptions{}, tr)
			Expect(err).NotTo(HaveOccurred())
			if tr != nil {
				// The snapshot of the first miss names the stall the
				// program marked.
				Expect(c.Trace).NotTo(BeNil(), "no trace snapshot kept: %v", c.Notes)
				Expect(c.Trace.Summary).To(ContainSubstring("hlr dut-imu stall 5ms"), "%s\ndut output:\n%s", c.Trace.Reason, p.OutputTail(5))
			}
			// The stall must break the bounds; the case then goes into
			// the report as the expected failure it is, not judged.
			Expect(d.Bounds.MaxMissRate).NotTo(BeNil(), "the stall is caught by the miss rate: the rack must bound it")
			Expect(c).NotTo(reportmatch.HaveLossAtMost(allowedMisses(&d, c)), "the stall was not caught")
			Expect(c.Verdict).To(Equal(report.Fail))
			c.Add(report.Addition{By: "reaction spec", Unjudged: true, Notes: []string{fmt.Sprintf(
				"expected to break its bounds (a 5 ms stall injected before every 5th answer, past the %s deadline): it did, %d of %d stimuli missed; judged by the spec, not the report",
				d.Correlation.Deadline, c.Lost, c.Sent)}})
			c.Finalize()
			Expect(harness.Record(c)).To(Succeed())
		}, SpecTimeout(3*time.Minute))

		crash := d.Name + " killed mid-run, restarted by its supervisor and counted"
		It(crash, func(ctx SpecContext) {
			p, err := steps.StartDUT(ctx, env, d.Name, nil)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Stop)
			c, err := steps.ReactionWithCrash(ctx, env, p, crash, d.Stimulus.Count/3)
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			Expect(p.Restarts()).To(Equal(1))
			Expect(c.Extra).To(HaveKeyWithValue(report.ExtraDUTRestarts, 1.0))
			Expect(c.Extra).To(HaveKeyWithValue(report.ExtraFaultWindows, 1.0))
			Expect(c.Notes).To(ContainElement(ContainSubstring("signal: killed")))
			// Answers after the restart: the program came back.
			Expect(c.Delivered).To(BeNumerically(">", int64(d.Stimulus.Count/3)), "no answer after the restart")
		}, SpecTimeout(3*time.Minute))
	}
})

// expectWithinBounds asserts the case against the dut's bounds with the
// suites' bound matchers (the miss rate as a loss bound on this case's
// stimuli), then the verdict, which holds the ground-truth check too.
func expectWithinBounds(d *fixtures.DUT, c *report.Case) {
	GinkgoHelper()
	if b := d.Bounds.P50; b > 0 {
		Expect(c).To(reportmatch.HaveP50Below(b + 1))
	}
	if b := d.Bounds.P99; b > 0 {
		Expect(c).To(reportmatch.HaveP99Below(b + 1))
	}
	if b := d.Bounds.Max; b > 0 {
		Expect(c).To(reportmatch.HaveMaxBelow(b + 1))
	}
	if b := d.Bounds.Jitter; b > 0 {
		Expect(c).To(reportmatch.HaveJitterBelow(b + 1))
	}
	if d.Bounds.MaxMissRate != nil {
		Expect(c).To(reportmatch.HaveLossAtMost(allowedMisses(d, c)))
	}
	Expect(c.Verdict).To(Equal(report.Pass), "%s\n%v", c.DistributionLine(), c.Checks)
}

// allowedMisses is the dut's miss-rate bound in stimuli of case c.
func allowedMisses(d *fixtures.DUT, c *report.Case) int64 {
	return int64(*d.Bounds.MaxMissRate * float64(c.Sent))
}
