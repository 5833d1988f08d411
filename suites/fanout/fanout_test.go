package fanout_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

const (
	rateHz   = 1000
	payload  = 1 << 10
	messages = 3000 // three seconds at 1 kHz: buffers pools are fully touched by half-time
	window   = 250 * time.Millisecond
	// peerMessages: a peer case's count, half a second at 1 kHz — the same
	// payload and rate as hilrig's, shorter to keep the suite's wall time
	// small with four peers beside hilrig.
	peerMessages = 500
	// heapSlack is how much an agent's live Go heap (as of its last GC) may
	// grow over the second half of the run (see memGrowth). Constant memory
	// means no growth with the message count: keeping every delivered 1 KiB
	// payload would add 1 MiB per subscriber per second. Measured: 0.
	heapSlack = 1 << 20
	// rssSlack bounds the resident set over the same span; it also sees
	// mappings and C memory the Go heap does not. Measured ≤ 1.3 MiB with
	// two CPU hogs on this 2-core VM — 5.4 MiB before window histograms
	// were encoded from pooled state (820 KB of garbage each).
	rssSlack = 4 << 20
)

// Fan-out: one publisher, 1 then 10 subscribers, 1 kHz of 1 KiB: zero
// loss by sequence numbers, the P99 increase from 1 to 10 subscribers
// within the rack's P99 bound, and every agent's RSS constant over the run.
var _ = Describe("fanout", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	env := steps.Setup(labels.Latency)
	tc := harness.Context()

	// hilrig's shm copy path and UDP, and beside them every peer of
	// ginkgo.config's middlewares in the same class (docs/peers.md); each
	// tc.Repetitions times, interleaved (steps.Rep), so the report can
	// call the differences.
	for rep := 1; rep <= tc.Repetitions; rep++ {
		for _, tr := range steps.Beside(steps.ShmCopy, steps.UDP) {
			fanout(env, tc, tr, rep)
		}
	}
})

// fanout registers repetition rep of tr's 1- and 10-subscriber cases.
func fanout(env *steps.Env, tc *harness.TestContext, tr steps.Path, rep int) {
	var one *report.Case // the 1-subscriber case, for the 10-subscriber comparison
	count := uint64(messages)
	if tr.IsPeer() {
		count = peerMessages
	}
	for _, n := range []int{1, 10} {
		name, repIdx := steps.Rep(tr.Named(fmt.Sprintf("%s reliable 1KiB @ 1000 Hz, %d subscriber(s)", tr, n)), rep, tc.Repetitions)
		It(name, func(ctx SpecContext) {
			if r := steps.Unrunnable(tc, tr); r != "" {
				Skip(r)
			}
			p := steps.Params{Path: tr, Payload: payload, RateHz: rateHz, Count: count, WarmUp: 100, Subscribers: n, Window: window}
			measure := steps.MeasureJudged
			if tr.IsPeer() {
				measure = steps.Measure // not judged against hilrig's bounds: nothing to re-measure
			}
			ran, err := measure(ctx, env, name, p)
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			c := ran.Case
			subs := ran.Result.Windows
			pubw := ran.Flow.Publisher.Windows()
			rss, rssWho := memGrowth(subs, pubw, func(w agentproto.Window) int64 { return w.RSSBytes })
			heap, heapWho := memGrowth(subs, pubw, func(w agentproto.Window) int64 { return w.HeapLiveBytes })
			// A peer's Extra holds its discovery time already: Add keeps it.
			add := report.Addition{By: "fanout spec", Extra: map[report.ExtraKey]float64{
				report.ExtraRSSGrowth: float64(rss), report.ExtraHeapGrowth: float64(heap)}}
			if b, ok := allocPerDelivery(subs); ok {
				add.Extra[report.ExtraAllocPerDelivery] = b
			}
			add.Notes = append(add.Notes, fmt.Sprintf("memory is per agent process (subscribers on one board share it), floor of the run's middle third to floor of its last third: live Go heap growth ≤ %d MiB (largest: %s), RSS growth ≤ %d MiB (largest: %s)", heapSlack>>20, heapWho, rssSlack>>20, rssWho))
			var incBound time.Duration
			if n > 1 && one != nil && !tr.IsPeer() && c.Bounds != nil && c.Bounds.P99 > 0 {
				incBound = c.Bounds.P99
				add.Extra[report.ExtraP99IncreaseVsOne] = float64(c.Histogram.Summary().P99 - one.Summary.P99)
				add.Notes = append(add.Notes, fmt.Sprintf("p99 increase from 1 to %d subscribers bounded by the profile's p99 (%v)", n, incBound))
			}
			if tr.IsPeer() {
				if n > 1 && one != nil {
					add.Extra[report.ExtraP99IncreaseVsOne] = float64(c.Histogram.Summary().P99 - one.Summary.P99)
				}
				add.Notes = append(add.Notes, fmt.Sprintf("peer: %d messages (hilrig's case: %d); memory growth and the p99 increase from 1 to %d subscribers are reported, not bounded — a run this short has no steady-state floor, and RSS includes the peer library's own memory", count, messages, n))
			}
			c.Add(add)
			c = steps.AsPeerCase(c)
			c.Repetition = repIdx
			Expect(harness.Record(c)).To(Succeed())
			if n == 1 {
				one = c
			}
			Expect(c).To(reportmatch.HaveNoLoss())
			Expect(c.Delivered).To(BeNumerically("==", int64(n)*c.Sent), "every subscriber gets every message")
			if tr.IsPeer() {
				return // loss and delivery only: see the note above
			}
			Expect(heap).To(BeNumerically("<=", heapSlack), "live Go heap of %s grew by %d bytes", heapWho, heap)
			Expect(rss).To(BeNumerically("<=", rssSlack), "RSS of %s grew by %d bytes", rssWho, rss)
			if n > 1 {
				Expect(one).NotTo(BeNil(), "the 1-subscriber case did not run")
				if incBound > 0 {
					Expect(time.Duration(c.Summary.P99-one.Summary.P99)).To(BeNumerically("<=", incBound),
						"p99 grew from %s (1 subscriber) to %s (%d)", report.FormatNs(one.Summary.P99), report.FormatNs(c.Summary.P99), n)
				}
			}
			Expect(c).To(reportmatch.MeetBounds())
		}, SpecTimeout(2*time.Minute))
	}
}

// memGrowth is the largest growth of one memory reading (of) of any
// endpoint over the second half of its run, and which endpoint it was:
// the lowest reading of the last third minus the lowest of the middle
// third. Lows, because a reading also catches what is only in flight (a
// window being encoded, a GC cycle's garbage in RSS) while a leak raises
// the floor; thirds, because set-up and the first touch of ring and
// reassembly buffers are over after the first. Windows without the
// reading are skipped. The live heap is refreshed only by a GC, and with
// allocation-free paths a run may see none: then every reading is the
// baseline the agent took at start. That is sound for the leaks this
// bounds: memory that grows is allocated, and a GC comes once about the
// live heap's size (GOGC 100, 2–8 MiB here) more is — keeping every 1 KiB
// payload at 1 kHz brings one within about two seconds.
func memGrowth(subs [][]agentproto.Window, pub []agentproto.Window, of func(agentproto.Window) int64) (int64, string) {
	var worst int64
	who := "none"
	for _, ws := range append(subs, pub) {
		var v []int64
		for _, w := range ws {
			if x := of(w); x > 0 {
				v = append(v, x)
			}
		}
		if len(v) < 3 {
			continue
		}
		mid, last := slices.Min(v[len(v)/3:2*len(v)/3]), slices.Min(v[2*len(v)/3:])
		if g := last - mid; g > worst || who == "none" {
			worst, who = g, fmt.Sprintf("%s (floor %.1f → %.1f MiB)", ws[0].Endpoint, float64(mid)/(1<<20), float64(last)/(1<<20))
		}
	}
	return worst, who
}

// allocPerDelivery is the Go heap allocated by the subscribers' agent
// process(es) per message delivered, over the run's last two thirds. The
// allocation counter is per process, so it is divided by the deliveries of
// every subscriber endpoint (on the sim rack they share one agent); ok is
// false when the windows carry no counter.
func allocPerDelivery(subs [][]agentproto.Window) (float64, bool) {
	var alloc, delivered int64
	for _, ws := range subs {
		if len(ws) < 3 || ws[len(ws)/3].HeapAllocBytes == 0 {
			continue
		}
		from := len(ws) / 3
		if a := ws[len(ws)-1].HeapAllocBytes - ws[from].HeapAllocBytes; a > alloc {
			alloc = a // one process: the largest span seen, not a sum
		}
		for _, w := range ws[from+1:] {
			delivered += int64(w.Received)
		}
	}
	if delivered == 0 {
		return 0, false
	}
	return float64(alloc) / float64(delivered), true
}
