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
	env := steps.Setup(labels.Latency)

	for _, tr := range steps.AllTransports {
		name := tr.String() + " node start to first delivered message"
		It(name, func(ctx SpecContext) {
			c, err := steps.StartToFirst(ctx, env, name, tr, 64, starts, startBound)
			if errors.Is(err, steps.ErrNoLink) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Summary.Count).To(BeNumerically("==", starts), "every start delivers its first message")
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
		}, SpecTimeout(2*time.Minute))
	}

	for _, tr := range []steps.Path{steps.ShmCopy, steps.UDP} {
		name := tr.String() + " publisher restart to subscriber resumption"
		It(name, func(ctx SpecContext) {
			c, err := steps.Restart(ctx, env, name, tr, 64, 5, startBound)
			if errors.Is(err, steps.ErrNoLink) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Failure).To(BeEmpty())
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
			AddReportEntry(name, fmt.Sprintf("resumed within %s", report.FormatNs(c.Summary.Max)))
		}, SpecTimeout(2*time.Minute))
	}
})
