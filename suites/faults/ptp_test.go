package faults_test

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
	"github.com/hilrig/hilrig/suites/labels"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// PTP fault bounds: ptp4l declares the master lost after its announce
// receipt timeout (3 × 2 s announce interval by default), and the monitor
// polls every 1.25 s, so 8 s covers detection; a restarted GM needs its own
// announce timeout and the slave's servo to settle.
const (
	lockLossBound = 8 * time.Second
	relockBound   = 30 * time.Second
)

var _ = Describe("clock faults", Label(labels.Faults, labels.NeedsPTP), func() {
	It("PTP grandmaster killed: loss of lock within bound, one-way samples of the affected windows excluded and counted, recovery detected",
		SpecTimeout(3*time.Minute), func(ctx SpecContext) {
			Expect(ptprig.Available()).To(Succeed(), "the rack claims ptp")
			r, err := ptprig.Start(ctx, &ptprig.Options{GMFirst: true})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(r.Close)
			src, err := timesync.DialPTP4L(ctx, r.SlaveSocket, nil)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(src.Close)
			mon, err := timesync.NewMonitor([]timesync.Board{{Name: "slave", Source: src, ExpectedGM: r.GMIdentity}},
				timesync.MonitorConfig{Bound: 100 * time.Microsecond})
			Expect(err).NotTo(HaveOccurred())
			Expect(mon.Start(ctx)).To(Succeed())
			DeferCleanup(mon.Stop)
			Eventually(func() bool { ok, _, _ := mon.Locked("slave"); return ok }).WithContext(ctx).WithTimeout(40*time.Second).WithPolling(250*time.Millisecond).Should(BeTrue(), "slave locks to the GM")

			By("a soak writer gates one-way samples on the slave's lock")
			path := filepath.Join(GinkgoT().TempDir(), "ptp-soak.jsonl")
			cp, err := soak.Create(path, soak.Header{Name: "ptp-gm-kill", Window: time.Second})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cp.Close)
			syn := soakrun.NewSynth(1000, 80e3, 3)
			run := &soakrun.Runner{Name: "ptp fault", Window: time.Second, Progress: time.Hour, Until: time.Now().Add(2 * time.Minute),
				Checkpoint: cp, PTP: soakrun.MonitorPTP{M: mon}}
			runErr := make(chan error, 1)
			go func() {
				runErr <- run.Run(ctx, []*soakrun.Track{
					{Agent: "slave", Flow: "cmd", Role: "subscriber", Src: syn.Sub(), PTPGated: true},
					{Agent: "slave", Flow: "cmd", Role: "publisher", Src: syn.Pub()},
				})
			}()
			Eventually(func() int { return run.Status().Windows }).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 3))

			By("killing the grandmaster")
			drainEvents(mon.Events())
			killedAt := time.Now()
			Expect(r.KillDaemon(ctx, ptprig.GM)).To(Succeed())
			lost, err := waitEvent(ctx, mon.Events(), lockLossBound+2*time.Second, timesync.EventLockLost)
			Expect(err).NotTo(HaveOccurred())
			detect := lost.At.Sub(killedAt)

			By("restarting the grandmaster")
			restartAt := time.Now()
			Expect(r.StartDaemon(ctx, ptprig.GM)).To(Succeed())
			relock, err := waitEvent(ctx, mon.Events(), relockBound+5*time.Second, timesync.EventLocked)
			Expect(err).NotTo(HaveOccurred())
			recovery := relock.At.Sub(restartAt)
			// Two more locked windows after the recovery, then stop.
			w0 := run.Status().Windows
			Eventually(func() int { return run.Status().Windows }).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeNumerically(">=", w0+2))
			run.Stop()
			Eventually(runErr).WithContext(ctx).WithTimeout(30 * time.Second).Should(Receive(BeNil()))

			lg, err := soak.Read(path)
			Expect(err).NotTo(HaveOccurred())
			maxUnlocked := int((detect + recovery + 3*time.Second) / time.Second)
			v := soak.Judge(lg, soak.Bounds{MaxUnlockedWindows: &maxUnlocked})
			var excluded, unlockedSamples, lockedWithHist int64
			for _, w := range lg.Windows {
				s := w.Agents[0].Streams[0]
				if !w.Locked() {
					unlockedSamples += s.Delivered
					excluded += s.Excluded
					Expect(s.Summary.Count).To(BeZero(), "window %d is unlocked but kept latency samples", w.Index)
				} else if s.Summary.Count > 0 {
					lockedWithHist++
				}
			}
			AddReportEntry("ptp gm kill", fmt.Sprintf("loss of lock detected %v after the GM kill (%s); relocked %v after the GM restart; %d of %d windows unlocked, %d one-way samples excluded",
				detect.Round(time.Millisecond), lost.Verdict.Cond, recovery.Round(time.Millisecond), v.UnlockedWindows, v.Windows, excluded))
			Expect(detect).To(BeNumerically("<", lockLossBound))
			Expect(relock.Recovered).To(BeTrue(), "the lock event after a loss is marked recovered")
			Expect(recovery).To(BeNumerically("<", relockBound))
			Expect(v.UnlockedWindows).To(BeNumerically(">=", 1))
			Expect(excluded).To(BeNumerically(">", 0))
			Expect(excluded).To(Equal(unlockedSamples), "every sample of an unlocked window is excluded and counted")
			Expect(lockedWithHist).To(BeNumerically(">=", 3), "locked windows keep their samples")
			Expect(soakrun.FailedChecks(v)).To(BeEmpty())
		})
})

func drainEvents(ch <-chan timesync.Event) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// waitEvent returns the first event of kind within d.
func waitEvent(ctx context.Context, ch <-chan timesync.Event, d time.Duration, kind timesync.EventKind) (timesync.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var seen []string
	for {
		select {
		case e := <-ch:
			if e.Kind == kind {
				return e, nil
			}
			seen = append(seen, e.Kind.String())
		case <-ctx.Done():
			return timesync.Event{}, fmt.Errorf("no %s event within %v (seen %v): %w", kind, d, seen, ctx.Err())
		}
	}
}
