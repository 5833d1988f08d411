package preflight_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Preflight: health checks before anything is measured. Every check that
// a lab would otherwise discover as a strange number later fails here,
// with the board and the reason.
var _ = Describe("preflight", Ordered, ContinueOnFailure, Label(labels.Smoke), func() {
	env := steps.Setup(labels.Smoke)

	It("reaches every board, whose agent runs this build of hilrig", func(ctx SpecContext) {
		// The same check every suite's health gate runs (harness.CheckHealth);
		// here each board is also recorded for the report.
		bin, err := env.Rig.Binary(ctx)
		Expect(err).NotTo(HaveOccurred())
		version, err := harness.AgentVersion(ctx, bin)
		Expect(err).NotTo(HaveOccurred())
		boards, err := harness.CheckBoards(ctx, env.Rig, version)
		for _, b := range boards {
			if b.Agent != "" {
				Expect(harness.RecordBoard(report.BoardInfo{Name: b.Name, Kernel: b.Kernel, AgentVersion: b.Agent})).To(Succeed())
			}
		}
		Expect(boards).To(HaveLen(len(env.Rack.Boards)))
		Expect(err).NotTo(HaveOccurred(), "rack %s: every board reachable, answering as itself, running %s", env.Rack.Name, version)
	}, SpecTimeout(3*time.Minute))

	It("finds every capability the rack claims working", func(ctx SpecContext) {
		// A claimed capability that does not work fails here; specs needing
		// it fail too (they are not skipped: the rack claims it).
		Expect(env.Rig.CheckClaims(ctx)).To(Succeed(), "rack %s claims %v", env.Rack.Name, env.Rack.Capabilities)
		// and the whole health gate every other suite runs before measuring:
		bin, err := env.Rig.Binary(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(harness.CheckHealth(ctx, env.Rig, bin)).To(Succeed())
	}, SpecTimeout(time.Minute))

	It("reports the CPU governor and online CPUs of every board", func(ctx SpecContext) {
		for _, b := range env.Rack.Boards {
			// The board's agent read them on the board (its hello), with
			// its real-time tuning: isolcpus, nohz_full, NIC IRQ affinity.
			a, err := env.Rig.Agent(ctx, b.Name)
			Expect(err).NotTo(HaveOccurred())
			h := a.Hello
			gov, online := h.CPUGovernor, h.OnlineCPUs
			Expect(harness.RecordBoard(report.BoardInfo{Name: b.Name, CPUGovernor: gov, OnlineCPUs: online, CPUModel: h.CPUModel, Tuning: h.Tuning})).To(Succeed())
			Expect(online).NotTo(BeEmpty(), "board %s: /sys/devices/system/cpu/online unreadable", b.Name)
			if gov == "" {
				gov = "n/a (no cpufreq: virtual machine or fixed clock)"
			}
			AddReportEntry("board "+b.Name, fmt.Sprintf("governor %s, online CPUs %s", gov, online))
			if gov != "performance" && !strings.HasPrefix(gov, "n/a") {
				Expect(harness.Note("board %s: CPU governor %q, not performance: frequency scaling widens latency tails", b.Name, gov)).To(Succeed())
			}
		}
	}, SpecTimeout(30*time.Second))

	It("finds every marker line free", func(ctx SpecContext) {
		checked := 0
		for _, b := range env.Rack.Boards {
			if !b.OnController() {
				continue // the line is on the board; its agent opens it when a flow asks for markers
			}
			for _, m := range b.Markers {
				spec := gpio.LineSpec{Chip: env.Rig.Chip(m.Chip), Line: m.LineName, ActiveLow: m.ActiveLow, Consumer: "hilrig-preflight"}
				if m.Offset != nil {
					spec.Line = fmt.Sprint(*m.Offset)
				}
				out, err := gpio.Open(ctx, spec, gpio.Mode{Kind: gpio.Toggle})
				Expect(err).NotTo(HaveOccurred(), "board %s marker %s (%s) is not free", b.Name, m.Name, spec)
				Expect(out.Close()).To(Succeed())
				checked++
			}
		}
		AddReportEntry("marker lines", fmt.Sprintf("%d marker lines requested and released", checked))
	}, SpecTimeout(30*time.Second))

	It("gets an answer to *IDN? from the scope", Label(labels.NeedsScope), func(ctx SpecContext) {
		s, err := steps.OpenScope(ctx, env)
		Expect(err).NotTo(HaveOccurred(), "rack %s claims a scope", env.Rack.Name)
		DeferCleanup(s.Close)
		Expect(s.Identity.Raw).NotTo(BeEmpty())
		Expect(harness.Note("scope: %s (driver %s)", s.Identity.Raw, s.Driver)).To(Succeed())
	}, SpecTimeout(30*time.Second))

	It("sees every board's PTP clock locked", Label(labels.NeedsPTP), func(ctx SpecContext) {
		res, err := steps.RequirePTPLocked(ctx, env.Rack)
		Expect(err).NotTo(HaveOccurred(), "rack %s claims ptp", env.Rack.Name)
		var offs []string
		for b, o := range res.Offsets {
			offs = append(offs, fmt.Sprintf("%s |offset| %v", b, o))
		}
		Expect(harness.Note("PTP locked: %s; %s", res.Where, strings.Join(offs, ", "))).To(Succeed())
	}, SpecTimeout(90*time.Second))

	It("measures the wake-up floor of every board", func(ctx SpecContext) {
		const period, n = time.Millisecond, 1000
		var floor *report.Histogram
		for _, b := range env.Rack.Boards {
			if !b.OnController() {
				Expect(harness.Note("board %s: wake-up floor not measured (ssh board: the agent has no wake-up probe)", b.Name)).To(Succeed())
				continue
			}
			if floor == nil { // local and netns boards share the controller's kernel and CPUs
				var err error
				floor, err = steps.WakeupFloor(ctx, period, n)
				Expect(err).NotTo(HaveOccurred())
				c := wakeupCase(env.Rack, floor, period)
				Expect(harness.Record(c)).To(Succeed())
				Expect(c.Summary.Count).To(BeNumerically("==", n))
			}
			s := floor.Summary()
			Expect(harness.RecordBoard(report.BoardInfo{Name: b.Name, WakeupFloor: &s})).To(Succeed())
		}
	}, SpecTimeout(time.Minute))
})

func wakeupCase(rack *fixtures.Rack, h *report.Histogram, period time.Duration) *report.Case {
	var on []string
	for _, b := range rack.Boards {
		if b.OnController() {
			on = append(on, b.Name)
		}
	}
	return &report.Case{Name: "wake-up floor (" + strings.Join(on, ", ") + ")", Histogram: h,
		Sent: h.Count(), Delivered: h.Count(), Duration: time.Duration(h.Count()) * period,
		Method: report.Method{Kind: report.OneWay, UncertaintyNs: rig.ClockReadNs(),
			Clocks: "CLOCK_MONOTONIC: clock_nanosleep(TIMER_ABSTIME) every " + period.String() + ", woken − requested (cyclictest-like, no middleware)"},
		Notes: []string{"the floor no message latency on these boards can beat; measured on the controller host, which local and netns boards share"}}
}
