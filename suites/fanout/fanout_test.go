package fanout_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures/agentproto"
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
	// rssSlack is how much an endpoint's resident set may grow between its
	// first and last window: constant memory means no growth with the
	// message count beyond allocator noise.
	rssSlack = 4 << 20
)

// Fan-out: one publisher, 1 then 10 subscribers, 1 kHz of 1 KiB: zero
// loss by sequence numbers, the P99 increase from 1 to 10 subscribers
// within the rack's P99 bound, and every agent's RSS constant over the run.
var _ = Describe("fanout", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	tc := harness.Context()
	var rc *steps.RigContext

	BeforeAll(func(ctx SpecContext) {
		var err error
		rc, err = steps.OpenRig(ctx, tc)
		Expect(err).NotTo(HaveOccurred(), "open rack %s", tc.Rack.Name)
		DeferCleanup(rc.Close)
		harness.OnFailure("rig diagnostics", rc.Diagnostics)
	}, NodeTimeout(5*time.Minute))

	for _, tr := range []string{steps.ShmCopy, steps.UDP} {
		var one *report.Case // the 1-subscriber case, for the 10-subscriber comparison
		for _, n := range []int{1, 10} {
			name := fmt.Sprintf("%s reliable 1KiB @ 1000 Hz, %d subscriber(s)", tr, n)
			It(name, func(ctx SpecContext) {
				ran, err := rc.Measure(ctx, name, steps.Params{Transport: tr, Payload: payload, RateHz: rateHz,
					Count: messages, WarmUp: 100, Subscribers: n, Window: window})
				if errors.Is(err, steps.ErrNoLink) {
					Skip(err.Error())
				}
				Expect(err).NotTo(HaveOccurred())
				c := ran.Case
				c.Labels = []string{labels.Latency}
				growth, who := rssGrowth(ran.Result.Windows, ran.Flow.Publisher.Windows())
				c.Extra = map[string]float64{"RSS growth over the second half (bytes)": float64(growth)}
				c.Notes = append(c.Notes, fmt.Sprintf("RSS is per agent process (subscribers on one board share it); bound: growth ≤ %d MiB from half-way through the run to its end (largest: %s)", rssSlack>>20, who))
				var incBound time.Duration
				if n > 1 && one != nil && c.Bounds != nil && c.Bounds.P99 > 0 {
					incBound = c.Bounds.P99
					c.Extra["p99 increase vs 1 subscriber (ns)"] = float64(c.Histogram.Summary().P99 - one.Summary.P99)
					c.Notes = append(c.Notes, fmt.Sprintf("p99 increase from 1 to %d subscribers bounded by the profile's p99 (%v)", n, incBound))
				}
				Expect(harness.Record(c)).To(Succeed())
				if n == 1 {
					one = c
				}
				Expect(c).To(reportmatch.HaveNoLoss())
				Expect(c.Delivered).To(BeNumerically("==", int64(n)*c.Sent), "every subscriber gets every message")
				Expect(growth).To(BeNumerically("<=", rssSlack), "RSS of %s grew by %d bytes", who, growth)
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
})

// rssGrowth is the largest growth of any endpoint's reported RSS from the
// window half-way through its run (set-up and the first touch of ring and
// reassembly buffers are done by then) to its last window, and which
// endpoint it was.
func rssGrowth(subs [][]agentproto.Window, pub []agentproto.Window) (int64, string) {
	var worst int64
	who := "none"
	for _, ws := range append(subs, pub) {
		var rss []int64
		for _, w := range ws {
			if w.RSSBytes > 0 {
				rss = append(rss, w.RSSBytes)
			}
		}
		if len(rss) < 2 {
			continue
		}
		if g := rss[len(rss)-1] - rss[len(rss)/2]; g > worst || who == "none" {
			worst, who = g, fmt.Sprintf("%s (%d → %d MiB)", ws[0].Endpoint, rss[len(rss)/2]>>20, rss[len(rss)-1]>>20)
		}
	}
	return worst, who
}
