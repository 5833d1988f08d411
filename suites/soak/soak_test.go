package soak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Not Ordered: the two specs are independent, and a failing smoke spec
// must not skip the long soak someone asked for. Which of them runs is
// soakrun.Select's decision (flags are parsed before the tree is built).
var _ = Describe("soak", Label(labels.Soak), func() {
	sel := soakrun.Select(harness.Context().Rack.Name)
	It("runs the short traffic mix with churn, checkpoints every window and meets the soak verdicts", Label(labels.Smoke),
		SpecTimeout(sel.SmokeTimeout), func(ctx SpecContext) {
			if !sel.Smoke {
				Skip(fmt.Sprintf("-hilrig.soak-profile=%s asks for that soak only", soakrun.FlagProfile()))
			}
			runSoak(ctx, soakrun.ProfileSmoke)
		})

	// The smoke soak over each peer middleware (docs/peers.md): the
	// traffic mix's flows of the peer's class, on the peer, shortened
	// to peerSmokeDuration, with churn; windows and verdicts as hilrig's.
	for _, peer := range steps.PeerPaths {
		It("runs the short traffic mix with churn over "+peer.Middleware+" and meets the soak verdicts", Label(labels.Smoke),
			SpecTimeout(sel.SmokeTimeout), func(ctx SpecContext) {
				if !sel.Smoke {
					Skip(fmt.Sprintf("-hilrig.soak-profile=%s asks for that soak only", soakrun.FlagProfile()))
				}
				if r := steps.Unrunnable(harness.Context(), peer); r != "" {
					Skip(r)
				}
				runSoakOn(ctx, soakrun.ProfileSmoke, peer, nil)
			})
	}

	// The smoke soak replaying a recording (ginkgo.config's replay:, as
	// suites/replay plans it; docs/mcap.md): every channel a flow on
	// hilrig's shm whose publisher loops the channel's plan, shortened to
	// peerSmokeDuration, with churn; windows and verdicts as the mix's.
	It("replays the recording looped, with churn, and meets the soak verdicts", Label(labels.Smoke, labels.Replay),
		SpecTimeout(sel.SmokeTimeout), func(ctx SpecContext) {
			if !sel.Smoke {
				Skip(fmt.Sprintf("-hilrig.soak-profile=%s asks for that soak only", soakrun.FlagProfile()))
			}
			replay, err := steps.ReplayPlanFor(harness.Context())
			Expect(err).NotTo(HaveOccurred())
			runSoakOn(ctx, soakrun.ProfileSmoke, steps.Path{}, replay)
		})

	It("runs the configured soak (full: soak.duration; accelerated: 1 h at 10× rates)", SpecTimeout(80*time.Hour), func(ctx SpecContext) {
		if sel.Long == "" {
			Skip(sel.SkipReason)
		}
		if sel.LongDUT != "" {
			Skip("-hilrig.soak-dut=" + sel.LongDUT + " asks for that dut's soak instead of the traffic mix")
		}
		replaying, err := soakrun.ReplayTraffic()
		Expect(err).NotTo(HaveOccurred())
		if !replaying {
			runSoak(ctx, sel.Long)
			return
		}
		// -hilrig.soak-traffic=replay: the recording, looped, is the
		// configured soak's traffic.
		replay, err := steps.ReplayPlanFor(harness.Context())
		Expect(err).NotTo(HaveOccurred())
		runSoakOn(ctx, sel.Long, steps.Path{}, replay)
	})
})

// peerSmokeDuration is a peer's smoke soak: ten checkpoint windows of
// 600 ms for the verdicts, short enough that four peers add about half a
// minute to the soak suite.
const peerSmokeDuration = 6 * time.Second

// runSoak is the whole soak: plan, rig, checkpoint, traffic, verdicts.
func runSoak(ctx context.Context, profile string) {
	GinkgoHelper()
	runSoakOn(ctx, profile, steps.Path{}, nil)
}

// runSoakOn is runSoak on a middleware: hilrig (the zero Path) or a peer,
// whose plan is the traffic mix's flows of its class, routed as the
// suites route it (steps.Route), shortened to peerSmokeDuration. With
// replay, the traffic is the recording's channels instead (on hilrig),
// shortened the same way.
func runSoakOn(ctx context.Context, profile string, peer steps.Path, replay *steps.ReplayPlan) {
	GinkgoHelper()
	tc := harness.Context()
	plan, err := soakrun.NewPlan(profile, tc.Config, tc.Rack, tc.Profile)
	Expect(err).NotTo(HaveOccurred())
	name := profile
	if peer.IsPeer() {
		name = profile + " " + peer.Middleware
		plan, err = plan.OnMiddleware(peer.Middleware, func(tr fixtures.Transport) (string, string, string, error) {
			if tr != peer.Transport {
				return "", "", "", fmt.Errorf("%s is not %s's class (%s)", tr, peer.Middleware, peer.Transport)
			}
			return steps.Route(tc.Rack, peer)
		})
		if err != nil {
			Skip(err.Error())
		}
		plan.Shorten(peerSmokeDuration)
		// Churn as hilrig's: a subscriber, then a publisher restart. The
		// peer header's epoch tells the restarted publisher's sequence
		// from loss, and the restarted subscriber is started LateJoin.
	}
	// The smoke replay runs beside the smoke mix (its own name and
	// checkpoint, shortened as a peer's); a configured soak replaying is
	// the run's soak (its name, checkpoint, resume and report section).
	smokeReplay := replay != nil && profile == soakrun.ProfileSmoke
	if replay != nil {
		plan, err = plan.Replaying(replayFlows(replay), tc.Rack, tc.Profile)
		Expect(err).NotTo(HaveOccurred())
		plan.Notes = append(plan.Notes, fmt.Sprintf("replaying %s: %d channels, the first %v at rate ×%g, looped to the soak's end", replay.Source, len(replay.Channels), replay.Span, replay.Scale))
		if profile == soakrun.ProfileAccelerated {
			plan.Notes = append(plan.Notes, "accelerated: the recording's rates are its own (replay.rate_scale), not ×10")
		}
	}
	if smokeReplay {
		name = profile + " replay"
		plan.Shorten(peerSmokeDuration)
	}
	r := announceAndOpen(ctx, tc, plan, name)

	cp, prior, err := openCheckpoint(tc, plan, name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Close)
	if !peer.IsPeer() && !smokeReplay {
		// Filed now, so the run report renders even a soak that fails or
		// times out from what its checkpoint holds. The report shows one
		// soak section: hilrig's; a peer's checkpoint is in its cases.
		Expect(harness.SoakCheckpoint(cp.Path())).To(Succeed())
	}

	// Publishers get a generous end (start-up of agents counts against
	// nothing); the soak's own clock starts once the traffic runs.
	feed, tracks, err := soakrun.StartRig(ctx, r, plan, time.Now().Add(remaining(plan, prior)+10*time.Minute))
	Expect(err).NotTo(HaveOccurred())
	until := time.Now().Add(remaining(plan, prior))
	feed.Until = until

	run := &soakrun.Runner{Name: "soak " + name, Window: plan.Window, Progress: plan.Progress, Until: until,
		Checkpoint: cp, Out: progressOut(), Churn: plan.Churn, Restarter: feed, Finisher: feed, Controller: "controller",
		HeapProfile: soakrun.HeapProfilePath(), Heartbeat: plan.Heartbeat, ConsoleTail: soakrun.ConsoleTail(r.Console, 40),
		ConsolePanic: soakrun.ConsolePanic(r.Console), Recoverer: feed, Recoveries: plan.Recoveries, Live: harness.Live(), Bounds: plan.Bounds}
	if prior != nil {
		run.Prior = prior.Windows // a resumed soak's verdict so far covers its earlier windows too
	}
	DeferCleanup(AttachProgressReporter(run.ProgressReport))
	runErr := run.Run(ctx, tracks)

	lg, err := soak.Read(cp.Path())
	Expect(err).NotTo(HaveOccurred())
	v := soak.Judge(lg, plan.Bounds)
	Expect(harness.Note("soak %s: checkpoint %s (its time series and verdicts are in the run report's soak section)", name, cp.Path())).To(Succeed())
	for _, c := range soakrun.Cases("soak", name, lg, v, plan.Bounds) {
		if peer.IsPeer() {
			c.Middleware = kind.Middleware(peer.Middleware)
			c.Add(report.Noted("soak spec", fmt.Sprintf("%s's smoke soak: the traffic mix's %s flows on %s, %v, churn every %v; bounds are the soak's (loss, window max)", peer.Middleware, peer.Transport, peer.Middleware, plan.Duration, plan.Churn)))
			for _, d := range feed.PeerDescriptions() {
				c.Add(report.Noted("soak spec", "peer: "+d))
			}
		}
		Expect(harness.Record(&c)).To(Succeed())
	}
	AddReportEntry("soak "+name+" status", run.Status().String())
	if first, last, ok := controllerRSS(lg); ok {
		Expect(harness.Note("soak %s: controller RSS %.1f → %.1f MiB over %d windows (trend in the soak verdicts)",
			name, float64(first)/(1<<20), float64(last)/(1<<20), len(lg.Windows))).To(Succeed())
	}

	Expect(runErr).NotTo(HaveOccurred(), "the soak stopped early; every closed window is in %s", cp.Path())
	Expect(v.Windows).To(BeNumerically(">=", 3), "a soak closes a window every %v", plan.Window)
	Expect(run.Status().Restarts).To(BeNumerically(">=", expectedRestarts(plan)), "churn restarts")
	Expect(soakrun.FailedChecks(v)).To(BeEmpty(), "soak verdicts (checkpoint %s)", cp.Path())
	Expect(v.Verdict).To(Equal(report.Pass))
}

// announceAndOpen prints the plan, files its notes and opens the rig
// (closed at the spec's cleanup).
func announceAndOpen(ctx context.Context, tc *harness.TestContext, plan *soakrun.Plan, name string) *rig.Rig {
	GinkgoHelper()
	fmt.Fprintln(GinkgoWriter, plan)
	for _, n := range plan.Notes {
		Expect(harness.Note("soak %s: %s", name, n)).To(Succeed())
	}
	r, err := openRig(ctx, tc, plan)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(r.Close)
	return r
}

// replayFlows are a replay plan's channels as soak flows, named after
// their topics (every byte an endpoint id does not take made '-').
func replayFlows(p *steps.ReplayPlan) []soakrun.ReplayFlow {
	var out []soakrun.ReplayFlow
	for i := range p.Channels {
		ch := &p.Channels[i]
		name := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' {
				return r
			}
			return '-'
		}, ch.Topic)
		out = append(out, soakrun.ReplayFlow{Name: "replay" + name, Payload: ch.MaxSize, RateHz: ch.RateHz(), Schedule: &ch.Plan})
	}
	return out
}

// openRig opens the rack as every suite does, under the run's rack lease
// (the rig names its sim GPIO chips per rig, so the soak coexists with
// other rigs of the same rack),
// with room for one checkpoint period of agent windows per endpoint.
func openRig(ctx context.Context, tc *harness.TestContext, plan *soakrun.Plan) (*rig.Rig, error) {
	return rig.Open(ctx, tc.Rack, &rig.Options{Logger: tc.Log, Binary: tc.Binary, MaxWindows: plan.RigMaxWindows(),
		ConsoleDir: tc.RunDir, Lease: tc.RackLease()})
}

// controllerRSS is the controller's RSS in the first and last window.
func controllerRSS(lg *soak.Log) (first, last int64, ok bool) {
	for _, w := range lg.Windows {
		for _, a := range w.Agents {
			if a.Agent == "controller" {
				if !ok {
					first, ok = a.RSSBytes, true
				}
				last = a.RSSBytes
			}
		}
	}
	return first, last, ok
}

// openCheckpoint creates the soak's checkpoint in the run directory, or
// resumes the one named by -hilrig.soak-resume (returning what it held).
func openCheckpoint(tc *harness.TestContext, plan *soakrun.Plan, name string) (*soak.Checkpointer, *soak.Log, error) {
	if plan.Resume != "" && name == plan.Profile {
		return soak.Resume(plan.Resume, time.Now())
	}
	path := plan.Out
	if name != plan.Profile {
		path = "" // a peer's soak: never the file asked for hilrig's
	}
	if path == "" {
		// Not in the run directory: the harness prunes old run
		// directories (KeepRuns), and a 72-hour soak's directory is the
		// oldest while it still runs.
		dir := filepath.Join(tc.ReportDir, "soak")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		path = filepath.Join(dir, tc.RunID+"-"+strings.ReplaceAll(name, " ", "-")+".jsonl")
	}
	cfg, _ := os.ReadFile(tc.ConfigPath)
	b := plan.Bounds
	cp, err := soak.Create(path, soak.Header{Name: "soak " + name, Window: plan.Window, Planned: plan.Duration,
		Rack: tc.Rack.Name, Config: string(cfg), Bounds: &b})
	return cp, nil, err
}

// remaining is the planned duration left: all of it for a new soak, what
// the resumed soak has not yet covered otherwise.
func remaining(plan *soakrun.Plan, prior *soak.Log) time.Duration {
	if prior == nil {
		return plan.Duration
	}
	left := time.Until(prior.Header.Started.Add(prior.Header.Planned))
	return max(left, plan.Window)
}

// expectedRestarts is the fewest churn restarts the plan must make: one
// per churn period that ends before the last window opens.
func expectedRestarts(plan *soakrun.Plan) int {
	if plan.Churn <= 0 {
		return 0
	}
	return int((plan.Duration - plan.Window) / plan.Churn)
}

func progressOut() *progressWriter { return &progressWriter{} }

// progressWriter sends progress lines to the Ginkgo writer and stdout, so
// a multi-day run shows them live without -v.
type progressWriter struct{}

func (progressWriter) Write(b []byte) (int, error) {
	if _, rc := GinkgoConfiguration(); rc.Verbose || rc.VeryVerbose {
		return GinkgoWriter.Write(b) // streamed live already
	}
	GinkgoWriter.Write(b)
	return os.Stdout.Write([]byte(strings.TrimRight(string(b), "\n") + "\n"))
}
