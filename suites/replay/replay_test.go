package replay_test

import (
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

// Replay: a recording (ginkgo.config's replay.file, or the sample robot
// mix generated at run time) carried as load over hilrig's shm and UDP
// and, beside them, every peer of ginkgo.config's middlewares: every
// channel a flow with the recording's sizes and inter-arrival times;
// per-topic latency and loss, the mix's CPU, judged against the rack's
// bounds.
var _ = Describe("replay", Ordered, ContinueOnFailure, Label(labels.Replay), func() {
	env := steps.Setup(labels.Replay)
	var plan *steps.ReplayPlan
	BeforeAll(func() {
		var err error
		plan, err = steps.ReplayPlanFor(env.TestContext)
		Expect(err).NotTo(HaveOccurred())
	})

	tc := harness.Context()
	for _, tr := range steps.Beside(steps.ShmCopy, steps.UDP) {
		name := tr.Named(tr.String() + " replay")
		It(name, func(ctx SpecContext) {
			if r := steps.Unrunnable(tc, tr); r != "" {
				Skip(r)
			}
			run, err := steps.ReplayJudged(ctx, env, name, tr, plan)
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			for i, c := range run.Topics {
				run.Topics[i] = steps.AsPeerCase(c)
				Expect(harness.Record(run.Topics[i])).To(Succeed())
			}
			mix := steps.AsPeerCase(run.Mix)
			Expect(harness.Record(mix)).To(Succeed())
			AddReportEntry(name, fmt.Sprintf("%d channels, %d of %d delivered, p99 %s, %.0f%% CPU", len(run.Topics), mix.Delivered, mix.Sent,
				report.FormatNs(mix.Summary.P99), mix.CPUPercent))
			Expect(run.Topics).To(HaveLen(len(plan.Channels)), "a case per channel")
			for _, c := range run.Topics {
				Expect(c).To(reportmatch.HaveNoLoss())
				Expect(c).To(reportmatch.MeetBounds())
			}
			Expect(mix).To(reportmatch.MeetBounds())
		}, SpecTimeout(2*time.Minute))
	}
})
