package faults_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/faultkit"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/labels"
)

// Bounds of the process faults. They are generous for a shared 2-core
// machine; what they catch is a subscriber that never resumes, or a
// publisher that only gives up at its send timeout.
const (
	resumeBound   = 2 * time.Second // new publisher ready → first delivery of its epoch
	deadSubBound  = 2 * time.Second // SIGKILL of a stalled subscriber → blocked reliable send returns
	sendTimeout   = 20 * time.Second
	helperTimeout = 20 * time.Second
)

var domainSeq atomic.Uint32

// shmPlace is a private segment directory and domain for one spec, so a
// spec never sees (or cleans) anyone else's segments.
type shmPlace struct{ Dir, Domain string }

func newShmPlace() shmPlace {
	GinkgoHelper()
	dir, err := os.MkdirTemp("/dev/shm", "hlrfault-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	return shmPlace{Dir: dir, Domain: fmt.Sprintf("flt%d-%d", os.Getpid(), domainSeq.Add(1))}
}

func (p shmPlace) endpoint(topic string, reliable bool, payload int, rate float64) faultkit.ShmEndpoint {
	return faultkit.ShmEndpoint{Domain: p.Domain, ShmDir: p.Dir, Topic: topic, Reliable: reliable, Payload: payload, RateHz: rate}
}

// startHelper starts a helper and waits for its "ready" line; it is
// killed at cleanup whatever happens.
func startHelper(ctx context.Context, role string, env ...string) (*faultkit.Helper, time.Time) {
	GinkgoHelper()
	h, err := faultkit.StartHelper(role, env...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(h.Close)
	wctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	_, at, err := h.Expect(wctx, "ready")
	Expect(err).NotTo(HaveOccurred())
	return h, at
}

func openNode(name string, p shmPlace) *middleware.Node {
	GinkgoHelper()
	n, err := middleware.OpenNode(name, &middleware.NodeOptions{Domain: p.Domain, ShmDir: p.Dir})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(n.Close)
	return n
}

var _ = Describe("process faults", Label(labels.Faults, labels.Smoke), func() {
	It("publisher SIGKILLed mid-stream and restarted: no torn message, resumption within bound, loss accounted exactly",
		SpecTimeout(90*time.Second), func(ctx SpecContext) {
			p := newShmPlace()
			ep := p.endpoint("fault/pubkill", true, 1024, 2000)
			n := openNode("watcher", p)
			sub, err := n.NewSubscriber(ep.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())
			w := faultkit.Watch(ctx, sub)

			pub1, _ := startHelper(ctx, faultkit.RolePub, ep.Env()...)
			Eventually(w.Delivered).WithContext(ctx).WithTimeout(20*time.Second).Should(BeNumerically(">=", 500), "first publisher delivering")
			Expect(pub1.Kill(ctx)).To(Succeed())

			// What the dead publisher published, read from the segment's
			// own counters (they outlive the process).
			seg, err := faultkit.Segment(p.Dir, p.Domain, ep.Topic)
			Expect(err).NotTo(HaveOccurred())
			Expect(seg.PublisherAlive).To(BeFalse(), "segment still names a live publisher after SIGKILL")
			published := seg.Publisher.Published
			Eventually(func() uint64 {
				e := w.Epochs()
				return e[len(e)-1].Delivered + e[len(e)-1].Lost
			}).WithContext(ctx).WithTimeout(5*time.Second).Should(Equal(published), "every message the dead publisher published is delivered or counted lost")

			pub2, _ := startHelper(ctx, faultkit.RolePub, ep.Env()...)
			restartAt := pub2.Started
			Eventually(func() int { return len(w.Epochs()) }).WithContext(ctx).WithTimeout(10*time.Second).Should(Equal(2), "a new epoch after the restart")
			Eventually(func() uint64 { return w.Epochs()[1].Delivered }).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 200))

			es := w.Epochs()
			resume := es[1].First.Sub(restartAt)
			AddReportEntry("publisher restart", fmt.Sprintf("dead epoch %d: published %d, delivered %d, lost %d; new epoch %d first delivery %v after its publisher process was started",
				es[0].Epoch, published, es[0].Delivered, es[0].Lost, es[1].Epoch, resume))
			c := shmCase("publisher SIGKILL + restart (shm 1KiB reliable 2kHz)", w, int64(published)+int64(es[1].Delivered))
			c.Add(report.Addition{By: "faults spec", Extra: map[report.ExtraKey]float64{report.ExtraResumeNs: float64(resume), report.ExtraDeadEpochPublished: float64(published)}})
			Expect(harness.Record(c)).To(Succeed())
			Expect(w.Err()).NotTo(HaveOccurred())
			for _, e := range es {
				Expect(e.Torn).To(BeZero(), "torn messages in epoch %d", e.Epoch)
				Expect(e.SeqErrors).To(BeZero(), "sequence errors in epoch %d", e.Epoch)
				Expect(e.Lost).To(BeZero(), "reliable topic lost messages in epoch %d", e.Epoch)
			}
			Expect(es[0].Delivered).To(Equal(published), "loss accounted exactly: delivered = published by the dead publisher")
			Expect(es[1].Epoch).NotTo(Equal(es[0].Epoch))
			Expect(resume).To(BeNumerically("<", resumeBound), "subscriber resumed after %v", resume)
		})

	It("subscriber SIGKILLed: a reliable publisher stops waiting for it within bound; best effort is unaffected",
		SpecTimeout(90*time.Second), func(ctx SpecContext) {
			By("reliable: a stalled subscriber blocks the publisher until it is killed")
			p := newShmPlace()
			rel := p.endpoint("fault/subkill-rel", true, 256, 0)
			n := openNode("pub", p)
			pub, err := n.NewPublisher(rel.Contract(), &middleware.PublisherOptions{SendTimeout: sendTimeout})
			Expect(err).NotTo(HaveOccurred())
			stalled := rel
			stalled.Stall = true
			victim, _ := startHelper(ctx, faultkit.RoleSub, stalled.Env()...)
			Eventually(func() int {
				s, _ := faultkit.Segment(p.Dir, p.Domain, rel.Topic)
				return len(s.Subscribers)
			}).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(1))

			var sent atomic.Int64
			unblocked := make(chan time.Time, 1)
			sendErr := make(chan error, 1)
			go func() {
				defer GinkgoRecover()
				buf := make([]byte, rel.Payload)
				for seq := uint64(1); ; seq++ {
					faultkit.Fill(buf, seq)
					if err := pub.Send(buf); err != nil {
						sendErr <- err
						return
					}
					if sent.Add(1) > int64(rel.Contract().Depth)+8 {
						unblocked <- time.Now()
						sendErr <- nil
						return
					}
				}
			}()
			// The ring fills, then Send waits for the stalled reader: the
			// count stops moving.
			last := int64(-1)
			Eventually(func() bool {
				cur := sent.Load()
				stuck := cur == last && cur >= int64(rel.Contract().Depth)
				last = cur
				return stuck
			}).WithContext(ctx).WithTimeout(5*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "reliable publisher waits for the stalled subscriber")
			stuckAt := sent.Load()
			Consistently(sent.Load).WithContext(ctx).WithTimeout(200*time.Millisecond).Should(Equal(stuckAt), "publisher is blocked, not progressing")
			killedAt := time.Now()
			Expect(victim.Kill(ctx)).To(Succeed())
			var freed time.Time
			Eventually(unblocked).WithContext(ctx).WithTimeout(sendTimeout).Should(Receive(&freed))
			Expect(<-sendErr).To(Succeed())
			released := freed.Sub(killedAt)
			st := pub.Stats()
			AddReportEntry("dead subscriber", fmt.Sprintf("reliable publisher released %v after SIGKILL of the stalled subscriber (send timeout %v); dropped subs %d, timeouts %d",
				released, sendTimeout, st.DroppedSubs, st.Timeouts))
			Expect(st.DroppedSubs).To(BeEquivalentTo(1), "the dead subscriber is dropped")
			Expect(st.Timeouts).To(BeZero(), "released by liveness (the dead process's lease), not by the send timeout")
			Expect(released).To(BeNumerically("<", deadSubBound))

			By("best effort: a stalled, then killed, subscriber costs a live subscriber nothing")
			be := p.endpoint("fault/subkill-be", false, 256, 0)
			bpub, err := n.NewPublisher(be.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())
			live, err := openNode("live", p).NewSubscriber(be.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())
			w := faultkit.Watch(ctx, live)
			st2 := be
			st2.Stall = true
			victim2, _ := startHelper(ctx, faultkit.RoleSub, st2.Env()...)
			const rounds, burst = 60, 8 // a burst fits the ring: the live reader is never lapped
			buf := make([]byte, be.Payload)
			seq := uint64(0)
			for r := range rounds {
				if r == rounds/2 {
					Expect(victim2.Kill(ctx)).To(Succeed())
				}
				for range burst {
					seq++
					faultkit.Fill(buf, seq)
					Expect(bpub.Send(buf)).To(Succeed())
				}
				Eventually(w.Delivered).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(seq))
			}
			es := w.Epochs()
			c := shmCase("subscriber SIGKILL: live best-effort subscriber", w, int64(seq))
			c.Add(report.Addition{By: "faults spec", Extra: map[report.ExtraKey]float64{report.ExtraReliableReleaseAfterKill: float64(released)}})
			Expect(harness.Record(c)).To(Succeed())
			Expect(es).To(HaveLen(1))
			Expect(es[0].Lost).To(BeZero())
			Expect(es[0].Torn).To(BeZero())
			Expect(bpub.Stats().Blocked).To(BeZero(), "a best-effort publisher never waits")
			Expect(bpub.Stats().Timeouts).To(BeZero())
		})

	It("stale shared memory left by killed processes: the next run starts cleanly and `hilrig shm clean` removes exactly the stale segments",
		SpecTimeout(3*time.Minute), func(ctx SpecContext) {
			bin, err := faultkit.Binary(ctx)
			Expect(err).NotTo(HaveOccurred())
			p := newShmPlace()
			a := p.endpoint("fault/stale-a", true, 512, 1000)
			b := p.endpoint("fault/stale-b", false, 512, 1000)
			live := p.endpoint("fault/live", true, 512, 1000)

			By("killing a publisher and a subscriber of topic a, and a publisher of topic b")
			pa, _ := startHelper(ctx, faultkit.RolePub, a.Env()...)
			sa, _ := startHelper(ctx, faultkit.RoleSub, a.Env()...)
			pb, _ := startHelper(ctx, faultkit.RolePub, b.Env()...)
			for _, h := range []*faultkit.Helper{pa, sa, pb} {
				Expect(h.Kill(ctx)).To(Succeed())
			}

			By("a live publisher on another topic keeps its segment in use")
			n := openNode("live", p)
			lp, err := n.NewPublisher(live.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())

			By("the next run on the stale topic starts cleanly: a subscriber attaches to the dead segment, a new publisher takes it over")
			sub, err := n.NewSubscriber(a.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())
			w := faultkit.Watch(ctx, sub)
			pa2, _ := startHelper(ctx, faultkit.RolePub, a.Env()...)
			Eventually(w.Delivered).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 100))
			es := w.Epochs()
			Expect(es[0].Torn).To(BeZero())
			Expect(es[0].SeqErrors).To(BeZero())
			Expect(pa2.Kill(ctx)).To(Succeed())
			Expect(sub.Close()).To(Succeed()) // the last user out may remove the dead segment

			By("killing a publisher and a subscriber of topic a again")
			pa3, _ := startHelper(ctx, faultkit.RolePub, a.Env()...)
			sa3, _ := startHelper(ctx, faultkit.RoleSub, a.Env()...)
			Expect(pa3.Kill(ctx)).To(Succeed())
			Expect(sa3.Kill(ctx)).To(Succeed())

			By("`hilrig shm ls` shows the stale segments; `hilrig shm clean` removes exactly those")
			ls, err := faultkit.ShmLs(ctx, bin, p.Dir)
			Expect(err).NotTo(HaveOccurred())
			var stale, inUse []string
			for _, e := range ls {
				if e.InUse {
					inUse = append(inUse, e.Path)
				} else {
					stale = append(stale, e.Path)
				}
			}
			Expect(stale).To(ConsistOf(
				middleware.SegmentPath(p.Dir, p.Domain, a.Topic), middleware.SegmentPath(p.Dir, p.Domain, b.Topic)), "hilrig shm ls:\n%v", ls)
			Expect(inUse).To(ConsistOf(middleware.SegmentPath(p.Dir, p.Domain, live.Topic)))
			removed, out, err := faultkit.ShmClean(ctx, bin, p.Dir)
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(removed).To(ConsistOf(stale), "hilrig shm clean said:\n%s", out)
			left, err := filepath.Glob(filepath.Join(p.Dir, "*"))
			Expect(err).NotTo(HaveOccurred())
			Expect(left).To(ConsistOf(inUse), "files left in %s", p.Dir)

			By("the live topic still works after the clean")
			ls2, err := openNode("after", p).NewSubscriber(live.Contract(), nil)
			Expect(err).NotTo(HaveOccurred())
			lw := faultkit.Watch(ctx, ls2)
			buf := make([]byte, live.Payload)
			for seq := uint64(1); seq <= 10; seq++ {
				faultkit.Fill(buf, seq)
				Expect(lp.Send(buf)).To(Succeed())
			}
			Eventually(lw.Delivered).WithContext(ctx).WithTimeout(5 * time.Second).Should(BeEquivalentTo(10))
		})
})

var _ = Describe("controller faults", Label(labels.Faults, labels.Smoke), func() {
	It("controller SIGKILLed during a soak: the JSONL holds every closed window and the soak resumes into it",
		SpecTimeout(2*time.Minute), func(ctx SpecContext) {
			path := filepath.Join(GinkgoT().TempDir(), "soak.jsonl")
			const win = 100 * time.Millisecond
			writer, _ := startHelper(ctx, faultkit.RoleSoakWriter, faultkit.SoakWriterEnv(path, win, false)...)
			durable := readWindows(ctx, writer, 6)
			Expect(writer.Kill(ctx)).To(Succeed())

			lg, err := soak.Read(path)
			Expect(err).NotTo(HaveOccurred())
			got := indices(lg)
			Expect(got).To(ContainElements(durable), "every window the writer reported durable is in the file")
			Expect(len(got)).To(BeNumerically("<=", len(durable)+1), "at most the window being written when killed is extra")
			for _, w := range lg.Windows {
				Expect(w.Agents).NotTo(BeEmpty())
				Expect(w.Agents[0].Streams[0].Summary.Count).To(BeNumerically(">", 0))
			}

			By("resuming into the same file")
			next := lg.NextIndex()
			resumed, _ := startHelper(ctx, faultkit.RoleSoakWriter, faultkit.SoakWriterEnv(path, win, true)...)
			more := readWindows(ctx, resumed, 3)
			Expect(more[0]).To(Equal(next), "numbering continues after the last closed window")
			Expect(resumed.Kill(ctx)).To(Succeed())

			lg2, err := soak.Read(path)
			Expect(err).NotTo(HaveOccurred())
			got2 := indices(lg2)
			Expect(got2[:len(got)]).To(Equal(got), "the windows before the resume are untouched")
			Expect(got2).To(ContainElements(more))
			Expect(slices.IsSorted(got2)).To(BeTrue())
			Expect(lg2.Resumes).To(HaveLen(1))
			Expect(lg2.Gaps).NotTo(BeEmpty(), "the resume shows as a gap")
			v := soak.Judge(lg2, soak.Bounds{})
			Expect(v.Windows).To(Equal(len(got2)))
			AddReportEntry("controller kill", fmt.Sprintf("killed after %d durable windows (file held %d); resumed at index %d; gap %v; notes %v",
				len(durable), len(got), next, lg2.Gaps[0].To.Sub(lg2.Gaps[0].From).Round(time.Millisecond), lg2.Notes))
		})
})

// shmCase is the report case of a watched shm subscriber.
func shmCase(name string, w *faultkit.Watcher, sent int64) *report.Case {
	c := &report.Case{Name: name, Transport: "shm", Subscribers: 1, Sent: sent, Histogram: w.Histogram(),
		Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC (one host)"}}
	for _, e := range w.Epochs() {
		c.Delivered += int64(e.Delivered)
		c.Lost += int64(e.Lost)
	}
	zero := int64(0)
	c.Bounds = &report.Bounds{MaxLost: &zero}
	return c
}

// readWindows reads "window N" lines until n windows are durable.
func readWindows(ctx context.Context, h *faultkit.Helper, n int) []int {
	GinkgoHelper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []int
	for len(out) < n {
		s, _, err := h.Expect(wctx, "window ")
		Expect(err).NotTo(HaveOccurred())
		i, err := strconv.Atoi(strings.TrimPrefix(s, "window "))
		Expect(err).NotTo(HaveOccurred())
		out = append(out, i)
	}
	return out
}

func indices(lg *soak.Log) []int {
	var out []int
	for _, w := range lg.Windows {
		out = append(out, w.Index)
	}
	return out
}
