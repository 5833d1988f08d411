package startup_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Starts per transport: each start is a fresh subscriber and publisher
// node pair delivering one message.
const starts = 10

// peerStarts per peer: its discovery time, enough for p50 and max without
// adding a second per start per peer to the suite.
const peerStarts = 5

// startBound bounds node start → first delivered message on any rack: a
// start that takes longer than this is a hang, not a slow start.
const startBound = 5 * time.Second

// Start-up: node start → first delivered message per transport, and
// publisher restart → subscriber resumption.
var _ = Describe("startup", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	env := steps.Setup(labels.Latency)

	tc := harness.Context()

	// Every transport on hilrig, and beside shm-copy and udp every peer
	// of ginkgo.config's middlewares: its discovery time (seed 002).
	for _, tr := range steps.Beside(steps.AllTransports...) {
		name := tr.Named(tr.String() + " node start to first delivered message")
		It(name, func(ctx SpecContext) {
			if r := steps.Unrunnable(tc, tr); r != "" {
				Skip(r)
			}
			n := starts
			if tr.IsPeer() {
				n = peerStarts
			}
			c, err := steps.StartToFirst(ctx, env, name, tr, 64, n, startBound)
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			if tr.IsPeer() {
				Expect(c.Extra).To(HaveKey(report.ExtraDiscovery), "the peer reported no discovery time")
			}
			c = steps.AsPeerCase(c)
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Summary.Count).To(BeNumerically("==", n), "every start delivers its first message")
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
		}, SpecTimeout(2*time.Minute))
	}

	for _, tr := range []steps.Path{steps.ShmCopy, steps.UDP} {
		name := tr.String() + " publisher restart to subscriber resumption"
		It(name, func(ctx SpecContext) {
			c, err := steps.Restart(ctx, env, name, tr, 64, 5, startBound)
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(c)).To(Succeed())
			Expect(c.Failure).To(BeEmpty())
			Expect(c.Verdict).NotTo(Equal(report.Fail), "%s", c.DistributionLine())
			AddReportEntry(name, fmt.Sprintf("resumed within %s", report.FormatNs(c.Summary.Max)))
		}, SpecTimeout(2*time.Minute))
	}
})
