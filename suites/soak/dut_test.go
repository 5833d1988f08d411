package soak_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// dutSmokeDuration is a dut's smoke soak: ten windows of 600 ms, the
// program killed after the third.
const dutSmokeDuration = 6 * time.Second

// The dut soak (docs/dut.md, "Soak"): every device under test of the
// rack (duts:) fed its stimuli in rounds for the soak's duration, on the
// checkpointed soak runner: per window the reaction's latency
// distribution, misses and the program's CPU and RSS; loss (the miss
// rate over the planned stimuli), drift and RSS verdicts. In the smoke
// form a started program is SIGKILLed after the third window: its
// supervisor restarts it, and the crash is counted as a fault window
// carrying its output tail. The long form is opt-in:
// -hilrig.soak-profile=full|accelerated -hilrig.soak-dut=<name>.
var _ = Describe("dut soak", Label(labels.Soak, labels.Reaction), func() {
	sel := soakrun.Select(harness.Context().Rack.Name)
	for _, d := range harness.Context().Rack.DUTs {
		It("runs dut "+d.Name+"'s reaction as a short soak; a killed program is restarted and counted", Label(labels.Smoke),
			SpecTimeout(sel.SmokeTimeout), func(ctx SpecContext) {
				if !sel.Smoke {
					Skip(fmt.Sprintf("-hilrig.soak-profile=%s asks for that soak only", soakrun.FlagProfile()))
				}
				runDUTSoak(ctx, soakrun.ProfileSmoke, &d, !d.External)
			})
		It("runs dut "+d.Name+"'s reaction as the configured soak (-hilrig.soak-dut)", SpecTimeout(80*time.Hour), func(ctx SpecContext) {
			if sel.Long == "" || sel.LongDUT != d.Name {
				Skip("the long dut soak runs with -hilrig.soak-profile=full|accelerated -hilrig.soak-dut=" + d.Name)
			}
			runDUTSoak(ctx, sel.Long, &d, false)
		})
	}
})

// runDUTSoak is a dut's soak: its program started and supervised on its
// board, its reaction measured in rounds into a checkpoint, judged; with
// kill, the program is SIGKILLed after the third window and the crash
// must be counted as one fault window.
func runDUTSoak(ctx context.Context, profile string, d *fixtures.DUT, kill bool) {
	GinkgoHelper()
	tc := harness.Context()
	base, err := soakrun.NewPlan(profile, tc.Config, tc.Rack, tc.Profile)
	Expect(err).NotTo(HaveOccurred())
	if profile == soakrun.ProfileSmoke {
		base.Shorten(dutSmokeDuration)
	}
	plan := base.ForDUT(d)
	name := profile + " dut " + d.Name
	pl := steps.RigDUTPlacement(announceAndOpen(ctx, tc, plan, name))
	p, err := dut.Start(ctx, tc.Rack, d.Name, pl, &dut.Options{OutputDir: tc.RunDir, Logger: tc.Log})
	if errors.Is(err, dut.ErrToolMissing) {
		Skip(err.Error()) // the C example on Cyclone DDS without its tools
	}
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Stop)
	cp, _, err := openCheckpoint(tc, plan, name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Close)

	killed := -1
	var killErr error
	run := &soakrun.Runner{Name: "soak " + name, Window: plan.Window, Progress: plan.Progress, Until: time.Now().Add(plan.Duration),
		Checkpoint: cp, Out: progressOut(), Controller: "controller", Heartbeat: plan.Heartbeat, Live: harness.Live(), Bounds: plan.Bounds}
	if kill {
		run.OnWindow = func(w *soak.Window) {
			if w.Index == 2 { // the runner goroutine, between two windows
				killed, killErr = w.Index, p.Kill()
			}
		}
	}
	feed, tracks := soakrun.StartDUT(ctx, p, pl, plan, run.Until, run.Stop)
	DeferCleanup(feed.Close)
	run.Finisher, run.Faults = feed, feed
	DeferCleanup(AttachProgressReporter(run.ProgressReport))
	runErr := run.Run(ctx, tracks)

	lg, err := soak.Read(cp.Path())
	Expect(err).NotTo(HaveOccurred())
	v := soak.Judge(lg, plan.Bounds)
	for _, c := range soakrun.Cases("soak", name, lg, v, plan.Bounds) {
		c.Add(report.Addition{By: "dut soak spec", Extra: map[report.ExtraKey]float64{report.ExtraDUTRestarts: float64(p.Restarts())},
			Notes: []string{fmt.Sprintf("dut %s's reaction (%s) as a %s soak of %v: %s", d.Name, feed.Stream, profile, plan.Duration, dut.Clocks)}})
		Expect(harness.Record(&c)).To(Succeed())
	}
	AddReportEntry("soak "+name+" status", run.Status().String())

	Expect(runErr).NotTo(HaveOccurred(), "the dut soak stopped early; every closed window is in %s", cp.Path())
	Expect(v.Windows).To(BeNumerically(">=", 3), "a soak closes a window every %v", plan.Window)
	if kill {
		Expect(killErr).NotTo(HaveOccurred())
		Expect(killed).To(Equal(2), "the program was not killed")
		Expect(p.Restarts()).To(Equal(1), "restarted by its supervisor")
		Expect(v.FaultWindows).To(Equal(1), "the crash counted as one fault window")
		Expect(v.Faults[0].Cause).To(ContainSubstring("signal: killed"))
		Expect(v.Faults[0].Console).NotTo(BeEmpty(), "the fault window carries the program's output tail")
	}
	Expect(soakrun.FailedChecks(v)).To(BeEmpty(), "soak verdicts (checkpoint %s)", cp.Path())
	Expect(v.Verdict).To(Equal(report.Pass))
}
