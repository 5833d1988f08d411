package faults_test

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/suites/internal/faultkit"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/labels"
)

// udpPair is an in-process UDP publisher → subscriber on loopback. The
// seeded fault layer only exists in-process (UDPConfig.Fault is not
// serialised), so these faults run in the controller, not in agents.
type udpPair struct {
	Pub *middleware.Publisher
	Sub *middleware.Subscriber
	W   *faultkit.Watcher
	C   middleware.Contract
}

func newUDPPair(ctx context.Context, topic string, reliable bool, payload int, fault *middleware.UDPFault, extraPeers ...string) udpPair {
	GinkgoHelper()
	n, err := middleware.OpenNode("udp-"+topic, &middleware.NodeOptions{Domain: fmt.Sprintf("fltudp%d-%d", os.Getpid(), domainSeq.Add(1))})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(n.Close)
	c := middleware.Contract{Topic: topic, MaxPayload: payload, Transport: middleware.TransportUDP, Depth: 256}
	if reliable {
		c.Reliability = middleware.Reliable
	}
	sc := c
	sc.UDP = middleware.UDPConfig{Listen: "127.0.0.1:0"}
	sub, err := n.NewSubscriber(sc, nil)
	Expect(err).NotTo(HaveOccurred())
	pc := c
	pc.UDP = middleware.UDPConfig{Source: "127.0.0.1:0", Peers: append([]string{sub.LocalUDPAddr().String()}, extraPeers...), Fault: fault}
	pub, err := n.NewPublisher(pc, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	return udpPair{Pub: pub, Sub: sub, W: faultkit.Watch(ctx, sub), C: c}
}

// sendPaced publishes n pattern messages at rateHz (0: back to back).
func (p udpPair) sendPaced(ctx context.Context, n int, rateHz float64, from uint64) error {
	buf := make([]byte, p.C.MaxPayload)
	var tick *time.Ticker
	if rateHz > 0 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / rateHz))
		defer tick.Stop()
	}
	for i := range n {
		faultkit.Fill(buf, from+uint64(i))
		if err := p.Pub.Send(buf); err != nil {
			return fmt.Errorf("send %d: %w", from+uint64(i), err)
		}
		if tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}

func udpStats(s *middleware.Subscriber) middleware.UDPSubscriberStats {
	st, _ := s.UDPStats()
	return st
}

var _ = Describe("network faults", Label(labels.Faults, labels.Smoke), func() {
	It("UDP under injected loss, duplication and reordering: reliable delivers everything in order; best effort counts exactly",
		SpecTimeout(2*time.Minute), func(ctx SpecContext) {
			const n = 2000
			fault := func(seed uint64) *middleware.UDPFault {
				return &middleware.UDPFault{Seed: seed, Drop: 0.05, Duplicate: 0.03, Reorder: 0.05, DataOnly: true}
			}

			By("reliable")
			rel := newUDPPair(ctx, "fault/udp-rel", true, 256, fault(42))
			Expect(rel.sendPaced(ctx, n, 4000, 1)).To(Succeed())
			Eventually(rel.W.Delivered).WithContext(ctx).WithTimeout(20 * time.Second).Should(BeEquivalentTo(n))
			fs, _ := rel.Pub.UDPStats()
			es := rel.W.Epochs()
			Expect(es).To(HaveLen(1))
			Expect(es[0].SeqErrors).To(BeZero(), "delivered in order, without gaps")
			Expect(es[0].Lost).To(BeZero())
			Expect(es[0].Torn).To(BeZero())
			Expect(fs.Fault.Dropped).To(BeNumerically(">", 0), "the fault layer dropped datagrams")
			Expect(fs.Fault.Duplicated).To(BeNumerically(">", 0))
			Expect(fs.Fault.Reordered).To(BeNumerically(">", 0))
			Expect(recordUDP("udp reliable under loss/dup/reorder", rel, n, fs)).To(Succeed())

			By("best effort")
			be := newUDPPair(ctx, "fault/udp-be", false, 256, fault(7))
			Expect(be.sendPaced(ctx, n, 4000, 1)).To(Succeed())
			bfs, _ := be.Pub.UDPStats()
			// Tail loss is revealed by the next heartbeat.
			Eventually(func() uint64 { e := be.W.Epochs(); return e[0].Delivered + e[0].Lost }).WithContext(ctx).WithTimeout(10*time.Second).Should(BeEquivalentTo(n), "delivered + lost = sent")
			bes := be.W.Epochs()[0]
			st := udpStats(be.Sub)
			AddReportEntry("udp best effort", fmt.Sprintf("faults %+v; delivered %d lost %d; receiver duplicates %d", bfs.Fault, bes.Delivered, bes.Lost, st.Duplicates))
			Expect(bes.Torn).To(BeZero())
			// docs/udp.md: best effort delivers in order; a datagram overtaken
			// by a newer one (reordered) has had its gap counted lost, and
			// arrives as an "older seq", counted as a duplicate.
			Expect(bes.Lost).To(Equal(bfs.Fault.DroppedData+bfs.Fault.Reordered), "lost = dropped + overtaken, exactly")
			Expect(bes.Delivered).To(BeEquivalentTo(n - int(bfs.Fault.DroppedData+bfs.Fault.Reordered)))
			Expect(st.Duplicates).To(Equal(bfs.Fault.Duplicated+bfs.Fault.Reordered), "duplicates = injected duplicates + late arrivals, exactly")
			Expect(bes.SeqErrors).To(BeZero())
			Expect(recordUDP("udp best effort under loss/dup/reorder", be, n, bfs)).To(Succeed())
		})

	It("a flood of malformed and forged datagrams at a subscriber while real traffic flows: no crash, counters match, real traffic meets its bounds",
		SpecTimeout(2*time.Minute), func(ctx SpecContext) {
			const payload, n, rate = 64, 2000, 1000.0
			sniff, err := faultkit.NewSniffer(64)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(sniff.Close)
			p := newUDPPair(ctx, "fault/udp-flood", false, payload, nil, sniff.Addr().String())

			By("real traffic starts; the sniffer captures real datagrams")
			sent := make(chan error, 1)
			go func() { sent <- p.sendPaced(ctx, n, rate, 1) }()
			Eventually(func() int { return len(sniff.Captured()) }).WithContext(ctx).WithTimeout(5 * time.Second).Should(BeNumerically(">=", 16))
			fl, err := faultkit.NewFlood(p.Sub.LocalUDPAddr(), sniff.Captured(), 99)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(fl.Close)

			By("flooding in bursts, each accounted before the next (no kernel drops)")
			base := udpStats(p.Sub)
			kinds := []faultkit.FloodKind{faultkit.Garbage, faultkit.Truncated, faultkit.Corrupted, faultkit.Forged}
			for round := range 40 {
				k := kinds[round%len(kinds)]
				Expect(fl.Send(ctx, k, 100)).To(Succeed())
				Eventually(func() uint64 {
					st := udpStats(p.Sub)
					return (st.Malformed - base.Malformed) + (st.Forged - base.Forged)
				}).WithContext(ctx).WithTimeout(5*time.Second).Should(Equal(fl.Sent[faultkit.Garbage]+fl.Sent[faultkit.Truncated]+fl.Sent[faultkit.Corrupted]+fl.Sent[faultkit.Forged]),
					"round %d (%s): every hostile datagram counted", round, k)
			}
			Expect(<-sent).To(Succeed())
			Eventually(func() uint64 { e := p.W.Epochs(); return e[0].Delivered + e[0].Lost }).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeEquivalentTo(n))

			st := udpStats(p.Sub)
			malformed := fl.Sent[faultkit.Garbage] + fl.Sent[faultkit.Truncated] + fl.Sent[faultkit.Corrupted]
			AddReportEntry("flood", fmt.Sprintf("sent garbage %d truncated %d corrupted %d forged %d; receiver malformed %d forged %d unknown-source %d duplicates %d",
				fl.Sent[0], fl.Sent[1], fl.Sent[2], fl.Sent[3], st.Malformed-base.Malformed, st.Forged-base.Forged, st.UnknownSource, st.Duplicates))
			Expect(p.W.Err()).NotTo(HaveOccurred(), "the subscriber kept running")
			Expect(st.Malformed - base.Malformed).To(Equal(malformed))
			Expect(st.Forged - base.Forged).To(Equal(fl.Sent[faultkit.Forged]))
			es := p.W.Epochs()
			Expect(es).To(HaveLen(1), "no forged datagram started a new stream")
			Expect(es[0].Torn).To(BeZero(), "no corrupted payload was delivered")

			c := udpCase("udp flood: real traffic under malformed/forged datagrams", p, n)
			c.RateHz = rate
			if b, ok := harness.Context().Bounds("udp", payload); ok {
				c.Bounds = &b
			}
			Expect(harness.Record(c)).To(Succeed())
			Expect(c).To(reportmatch.HaveNoLoss())
			Expect(c).To(reportmatch.MeetBounds())
		})
})

func udpCase(name string, p udpPair, n int) *report.Case {
	es := p.W.Epochs()
	c := &report.Case{Name: name, Transport: "udp", PayloadBytes: int64(p.C.MaxPayload), Subscribers: 1, Sent: int64(n),
		Histogram: p.W.Histogram(), Method: report.Method{Kind: report.OneWay, Clocks: "CLOCK_MONOTONIC (one process)"}}
	c.Reliability = "best-effort"
	if p.C.Reliability == middleware.Reliable {
		c.Reliability = "reliable"
	}
	for _, e := range es {
		c.Delivered += int64(e.Delivered)
		c.Lost += int64(e.Lost)
	}
	return c
}

func recordUDP(name string, p udpPair, n int, fs middleware.UDPPublisherStats) error {
	c := udpCase(name, p, n)
	c.Extra = map[string]float64{"fault dropped": float64(fs.Fault.Dropped), "fault duplicated": float64(fs.Fault.Duplicated),
		"fault reordered": float64(fs.Fault.Reordered)}
	c.Notes = append(c.Notes, "loss here is injected by the seeded fault layer; judged by the spec, not by bounds")
	return harness.Record(c)
}
