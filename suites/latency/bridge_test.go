package latency_test

import (
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// What `hilrig bridge` adds (issue 33, scope 3): every topic of
// ginkgo.config's ros2_topics on hilrig's bus between the rack's shm
// boards (the direct path), then through a bridge process the rig starts
// on a board, both ways — hilrig's bus → a ROS 2 node beside the bridge
// (to_ros), a ROS 2 node beside the bridge → hilrig's bus (from_ros) —
// on each DDS peer of steps.BridgePaths. Every run is timed from the ROS 2 header stamp the
// publisher wrote to the subscriber's receive stamp; the through case
// carries the direct figures, through − direct and the bridge process's
// CPU beside the seed's claim (steps.BridgeCompare), reported, not judged.
var _ = Describe("what hilrig bridge adds between hilrig's bus and ROS 2", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	tc := harness.Context()
	env := steps.Setup(labels.Latency)
	for _, rt := range tc.Config.ROS2Topics {
		n, warm, timeout := steps.FlowBudget(tc, rt.RateHz)
		base := steps.ROS2Name(rt)
		topic := rt.Topic()
		// A name of this process's own: board-a's DDS runs on the
		// machine's loopback, where other runs may use the config's names.
		topic.Name = fmt.Sprintf("hilrig_bridge_%d/%s", os.Getpid(), topic.Name)
		params := func(path steps.Path) steps.Params {
			p, err := steps.ROS2Params(rt, topic, path, n, warm)
			Expect(err).NotTo(HaveOccurred())
			return p
		}
		var direct *report.Case
		It(base+" shm-copy on hilrig's bus (the bridge's direct path)", func(ctx SpecContext) {
			name := base + " shm-copy direct"
			ran, err := steps.Measure(ctx, env, name, params(steps.ShmCopy))
			if steps.NotOnRack(err) {
				Skip(err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Record(ran.Case)).To(Succeed())
			Expect(ran.Case.Failure).To(BeEmpty())
			Expect(ran.Case.Delivered).To(BeNumerically(">", 0), "no message of %s arrived", topic)
			direct = ran.Case
		}, SpecTimeout(timeout))
		for _, path := range steps.BridgePaths {
			for _, dir := range []bridgeconf.Direction{bridgeconf.ToROS, bridgeconf.FromROS} {
				name := fmt.Sprintf("%s bridge %s %s shm-copy", path.Middleware, dir, base)
				It(name, func(ctx SpecContext) {
					if r := steps.Unrunnable(tc, path); r != "" {
						Skip(r)
					}
					q := params(path)
					q.Bridge = &rig.BridgeSpec{Direction: dir}
					ran, err := steps.Measure(ctx, env, name, q)
					if steps.NotOnRack(err) {
						Skip(err.Error())
					}
					Expect(err).NotTo(HaveOccurred())
					c := steps.BridgeCompare(ran, direct)
					Expect(harness.Record(c)).To(Succeed())
					Expect(c.Failure).To(BeEmpty())
					Expect(c.Delivered).To(BeNumerically(">", 0), "no message of %s crossed the bridge", topic)
					Expect(c.Extra).To(HaveKey(report.ExtraBridgeCPU), "the bridge process's CPU was not read")
				}, SpecTimeout(timeout))
			}
		}
	}
})
