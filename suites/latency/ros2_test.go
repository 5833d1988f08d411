package latency_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// Latency of ROS 2 topics (issue 33): every topic of ginkgo.config's
// ros2_topics, one way, on each DDS peer, the peer publishing and
// subscribing exactly as ROS 2 nodes on rmw_cyclonedds_cpp /
// rmw_fastrtps_cpp do (rt/<name>, the ROS type name, XCDR1, the
// profile's QoS). Reported beside the raw peer cases, not judged against
// the rack's bounds (hilrig's); the latency runs from the message's
// header stamp (the case's method says so). Loss is reported: the
// default profile is reliable within keep-last 10 only.
var _ = Describe("latency of ROS 2 topics on the DDS peers", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	tc := harness.Context()
	env := steps.Setup(labels.Latency)
	for _, rt := range tc.Config.ROS2Topics {
		for _, path := range steps.ROS2Paths {
			name := fmt.Sprintf("%s %s", path.Middleware, steps.ROS2Name(rt))
			n, warm, timeout := steps.FlowBudget(tc, rt.RateHz)
			It(name, func(ctx SpecContext) {
				if r := steps.Unrunnable(tc, path); r != "" {
					Skip(r)
				}
				topic := rt.Topic()
				p, err := steps.ROS2Params(rt, topic, path, n, warm)
				Expect(err).NotTo(HaveOccurred())
				ran, err := steps.Measure(ctx, env, name, p)
				if steps.NotOnRack(err) {
					Skip(err.Error())
				}
				Expect(err).NotTo(HaveOccurred())
				c := steps.AsPeerCase(ran.Case)
				Expect(harness.Record(c)).To(Succeed())
				Expect(c.Failure).To(BeEmpty())
				Expect(c.Delivered).To(BeNumerically(">", 0), "no message of %s arrived", topic)
			}, SpecTimeout(timeout))
		}
	}
})
