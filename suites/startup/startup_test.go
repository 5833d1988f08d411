package startup_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Starts per transport: each start is a fresh subscriber and publisher
// node pair delivering one message.
const starts = 10

// startBound bounds node start → first delivered message on any rack: a
// start that takes longer than this is a hang, not a slow start.
const startBound = 5 * time.Second

// Start-up: node start → first delivered message per transport, and
// publisher restart → subscriber resumption.
var _ = Describe("startup", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
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
		name := tr + " node start to first delivered message"
		It(name, func(ctx SpecContext) {
			c, err := rc.StartToFirst(ctx, name, tr, 64, starts)
			if errors.Is(err, steps.ErrNoLink) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			c.Labels = []string{labels.Latency}
			c.Bounds = &report.Bounds{Max: startBound, MaxLost: report.Loss(0)}
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Summary.Count).To(BeNumerically("==", starts), "every start delivers its first message")
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
		}, SpecTimeout(2*time.Minute))
	}

	for _, tr := range []string{steps.ShmCopy, steps.UDP} {
		name := tr + " publisher restart to subscriber resumption"
		It(name, func(ctx SpecContext) {
			c, err := rc.Restart(ctx, name, tr, 64, 5)
			if errors.Is(err, steps.ErrNoLink) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			c.Labels = []string{labels.Latency}
			c.Bounds = &report.Bounds{Max: startBound}
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Failure).To(BeEmpty())
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
			AddReportEntry(name, fmt.Sprintf("resumed within %s", report.FormatNs(c.Summary.Max)))
		}, SpecTimeout(2*time.Minute))
	}
})
