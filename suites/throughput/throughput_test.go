package throughput_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Message counts of the throughput cases: enough for a steady state on a
// 2-core machine in about a second each.
// Per transport for the bulk case: about a second each on the shared
// 2-core dev VM (shm copy ~0.7 GB/s, udp ~90 MB/s, shm loan ~40k msg/s).
var bulkMessages = map[steps.Path]uint64{steps.ShmCopy: 1000, steps.ShmLoan: 20000, steps.UDP: 150}

// Peer cases (docs/peers.md) send the same payloads, as fast as possible
// too, but fewer: enough for a steady state without adding minutes per
// middleware to the suite (the peers' bulk rates are 0.1–1 GB/s here).
var peerBulkMessages = map[fixtures.Transport]uint64{fixtures.Shm: 200, fixtures.UDP: 100}

const peerSmallMessages = 10000

const (
	smallMessages = 100000 // 16 B best effort
	batchMessages = 2000   // 1 KiB at 2 kHz: one second
)

// Throughput: bulk MB/s (1 MiB reliable), small-message rate (16 B best
// effort), and UDP batching on/off at 2 kHz of 1 KiB with P99 and CPU side
// by side.
var _ = Describe("throughput", Ordered, ContinueOnFailure, Label(labels.Throughput), func() {
	env := steps.Setup(labels.Throughput)

	// measure runs a saturated flow, judged on the profile's throughput,
	// CPU and loss bounds only (steps.JudgeThroughput).
	measure := func(ctx SpecContext, name string, p steps.Params) *report.Case {
		p.Judge = steps.JudgeThroughput
		ran, err := steps.Measure(ctx, env, name, p)
		if steps.NotOnRack(err) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		return ran.Case
	}

	tc := harness.Context()
	// runnable skips a spec whose middleware does not run here.
	runnable := func(p steps.Path) {
		if r := steps.Unrunnable(tc, p); r != "" {
			Skip(r)
		}
	}

	// Bulk: hilrig's shm copy and loan paths and UDP, and beside them
	// every peer of ginkgo.config's middlewares in the same class.
	for _, tr := range steps.Beside(steps.ShmCopy, steps.ShmLoan, steps.UDP) {
		name := tr.Named(tr.String() + " reliable 1MiB as fast as possible")
		n := bulkMessages[tr]
		if tr.IsPeer() {
			n = peerBulkMessages[tr.Transport]
		}
		It(name, func(ctx SpecContext) {
			runnable(tr)
			c := steps.AsPeerCase(measure(ctx, name, steps.Params{Path: tr, Payload: 1 << 20, Count: n, WarmUp: 10, Drain: 10 * time.Second}))
			Expect(harness.Record(c)).To(Succeed())
			AddReportEntry(name, fmt.Sprintf("%.1f MB/s, %.0f%% CPU", c.ThroughputMBps, c.CPUPercent))
			Expect(c.ThroughputMBps).To(BeNumerically(">", 0), "nothing delivered")
			Expect(c).To(reportmatch.HaveNoLoss())
			Expect(c).To(reportmatch.MeetBounds())
		}, SpecTimeout(2*time.Minute))
	}

	for _, tr := range steps.Beside(steps.Intra, steps.ShmCopy, steps.UDP) {
		name := tr.Named(tr.String() + " best-effort 16B message rate")
		n, warm := uint64(smallMessages), uint64(1000)
		if tr.IsPeer() {
			// A peer message carries its 24 B in-band header
			// (agentproto.PeerHeaderBytes): 16 B is below what a peer
			// can send, so peers send that header alone.
			n, warm = peerSmallMessages, 200
		}
		It(name, func(ctx SpecContext) {
			runnable(tr)
			payload := 16
			if tr.IsPeer() {
				payload = agentproto.PeerHeaderBytes
			}
			c := measure(ctx, name, steps.Params{Path: tr, BestEffort: true, Payload: payload, Count: n, WarmUp: warm})
			if tr.IsPeer() {
				c.Add(report.Noted("throughput spec", fmt.Sprintf("peer: %d B per message, its in-band header (sequence number and stamps) alone — the smallest message a peer sends; hilrig's 16 B case carries the same fields out of band", payload)))
			}
			c = steps.AsPeerCase(c)
			Expect(harness.Record(c)).To(Succeed())
			AddReportEntry(name, fmt.Sprintf("%.0f msg/s delivered, %d of %d lost, %.0f%% CPU", c.MsgsPerSec, c.Lost, c.Sent, c.CPUPercent))
			Expect(c.MsgsPerSec).To(BeNumerically(">", 0), "nothing delivered")
			Expect(c).To(reportmatch.MeetBounds())
		}, SpecTimeout(2*time.Minute))
	}

	// hilrig at the peers' smallest message (their 24 B in-band header),
	// beside every class a peer runs in: the pair the comparison reports
	// (report.CompareMiddlewares pairs by payload), same count and warm-up
	// as the peers'. The 16 B cases above keep hilrig's own history.
	for _, tr := range steps.Beside(steps.ShmCopy, steps.UDP) {
		if tr.IsPeer() || !slices.ContainsFunc(steps.PeerPaths, func(p steps.Path) bool { return p.Transport == tr.Transport }) {
			continue
		}
		name := tr.String() + fmt.Sprintf(" best-effort %dB message rate (beside the peers)", agentproto.PeerHeaderBytes)
		It(name, func(ctx SpecContext) {
			runnable(tr)
			c := measure(ctx, name, steps.Params{Path: tr, BestEffort: true, Payload: agentproto.PeerHeaderBytes, Count: peerSmallMessages, WarmUp: 200})
			c.Add(report.Noted("throughput spec", fmt.Sprintf("hilrig at %d B, the peers' smallest message (their in-band header alone), %d messages as theirs: the row the middleware comparison pairs", agentproto.PeerHeaderBytes, peerSmallMessages)))
			Expect(harness.Record(c)).To(Succeed())
			AddReportEntry(name, fmt.Sprintf("%.0f msg/s delivered, %d of %d lost, %.0f%% CPU", c.MsgsPerSec, c.Lost, c.Sent, c.CPUPercent))
			Expect(c.MsgsPerSec).To(BeNumerically(">", 0), "nothing delivered")
			Expect(c).To(reportmatch.MeetBounds())
		}, SpecTimeout(2*time.Minute))
	}

	var batchOff *report.Case
	for _, on := range []bool{false, true} {
		mode := "off"
		if on {
			mode = "on"
		}
		name := "udp reliable 1KiB @ 2000 Hz batching " + mode
		It(name, func(ctx SpecContext) {
			batch := 0
			if on {
				batch = batchBytes(env.Rack)
			}
			ran, err := steps.Measure(ctx, env, name, steps.Params{Path: steps.UDP, Payload: 1 << 10, RateHz: 2000,
				Count: batchMessages, WarmUp: 100, BatchBytes: batch})
			if errors.Is(err, steps.ErrNoLink) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			c := ran.Case
			if on {
				c.Add(report.Noted("throughput spec", fmt.Sprintf("a %d B batch holds %d message(s) of 1 KiB with its 68 B header (link MTU − 28)", batch, batch/(1024+68))))
				if off := batchOff; off != nil {
					p99 := c.Histogram.Summary().P99
					c.Add(report.Addition{By: "throughput spec", Extra: map[report.ExtraKey]float64{
						report.ExtraBatchingOffP99: float64(off.Summary.P99), report.ExtraBatchingOnP99: float64(p99),
						report.ExtraBatchingOffCPU: off.CPUPercent, report.ExtraBatchingOnCPU: c.CPUPercent,
					}, Notes: []string{fmt.Sprintf("side by side (off → on): p99 %s → %s, CPU %.1f%% → %.1f%%",
						report.FormatNs(off.Summary.P99), report.FormatNs(p99), off.CPUPercent, c.CPUPercent)}})
				}
			}
			Expect(harness.Record(c)).To(Succeed())
			if !on {
				batchOff = c
			}
			AddReportEntry(name, fmt.Sprintf("p99 %s, CPU %.1f%%", report.FormatNs(c.Summary.P99), c.CPUPercent))
			Expect(c).To(reportmatch.HaveNoLoss())
			Expect(c).To(reportmatch.MeetBounds())
		}, SpecTimeout(time.Minute))
	}
})

// batchBytes is the largest batch the udp link's MTU allows (MTU − 28 for
// the IP and UDP headers; 1500 unless the rack link says otherwise).
func batchBytes(rack *fixtures.Rack) int {
	mtu := 1500
	for _, l := range rack.Links {
		if l.Transport == fixtures.UDP {
			if l.MTU > 0 {
				mtu = l.MTU
			} else if l.AAddr == "127.0.0.1" && l.BAddr == "127.0.0.1" {
				mtu = 65535
			}
			break
		}
	}
	return min(mtu-28, 8192)
}
