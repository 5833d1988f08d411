package rig_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestBridgedFlowSpec: a bridged flow without a ROS 2 topic, without a
// DDS peer, or with two subscribers is refused before anything starts.
func TestBridgedFlowSpec(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	r := openRig(context.Background(), t, rack, &rig.Options{Binary: hilrigBin})
	topic := &rostopic.Topic{Name: "imu", Type: "sensor_msgs/Imu"}
	for name, spec := range map[string]rig.FlowSpec{
		"no topic": {Traffic: rig.Traffic{Link: "a-b-shm", Middleware: "cyclonedds", Payload: 324, Count: 1}},
		"no peer":  {Traffic: rig.Traffic{Link: "a-b-shm", Payload: 324, Count: 1, ROS2: topic}},
		"two subs": {Traffic: rig.Traffic{Link: "a-b-shm", Middleware: "cyclonedds", Payload: 324, Count: 1, ROS2: topic}, To: []string{"board-b", "board-b"}},
	} {
		spec.Bridge = &rig.BridgeSpec{}
		if _, err := r.Flow(context.Background(), spec); err == nil {
			t.Errorf("%s: started", name)
		}
	}
}

// TestBridgedFlow runs sensor_msgs/Imu through a `hilrig bridge` process
// on the sim rack's shm link, both directions, on Cyclone DDS: every
// message the subscriber got has a latency from the publisher's header
// stamp, and the bridge's CPU was read over the run.
func TestBridgedFlow(t *testing.T) {
	const peer = "cyclonedds"
	ctx, _, r := peerRig(t, peer)
	for _, dir := range []bridgeconf.Direction{bridgeconf.ToROS, bridgeconf.FromROS} {
		t.Run(dir.String(), func(t *testing.T) {
			const n = 300
			topic := &rostopic.Topic{Name: fmt.Sprintf("rig_bridge/imu_%s_%d", dir, os.Getpid()), Type: "sensor_msgs/Imu", Profile: rostopic.ProfileDefault}
			f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Middleware: peer, Payload: 324, RateHz: 500, Count: n, ROS2: topic},
				Bridge: &rig.BridgeSpec{Direction: dir}, Drain: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Subscribers) != 1 || res.Subscribers[0].Received == 0 {
				t.Fatalf("subscriber finals %+v: nothing crossed the bridge", res.Subscribers)
			}
			sub := res.Subscribers[0]
			if sub.Latency.Count() != int64(sub.Received) || sub.Latency.ValueAtQuantile(0) <= 0 {
				t.Errorf("latency: %d values (min %d) for %d messages", sub.Latency.Count(), sub.Latency.ValueAtQuantile(0), sub.Received)
			}
			if res.Bridge == nil || res.Bridge.Wall <= 0 || res.Bridge.CPU < 0 {
				t.Fatalf("bridge usage %+v", res.Bridge)
			}
			// The bridge's own account: it forwarded what the subscriber got
			// (the subscriber cannot get more than was forwarded).
			if h := res.Bridge.Health; h == nil || h.ROS != topic.Name || h.Direction != dir || h.Forwarded < sub.Received || h.AddedP50Ns <= 0 {
				t.Errorf("bridge health %+v: want %s %s with ≥ %d forwarded and its added latency", h, dir, topic.Name, sub.Received)
			} else {
				t.Logf("bridge's own added latency: p50 %v p99 %v max %v", time.Duration(h.AddedP50Ns), time.Duration(h.AddedP99Ns), time.Duration(h.AddedMaxNs))
			}
			t.Logf("%s: %d of %d, p50 %v p99 %v; bridge on %s: %v CPU over %v (%.2f %%)", dir, sub.Received, n,
				time.Duration(sub.Latency.ValueAtQuantile(50)), time.Duration(sub.Latency.ValueAtQuantile(99)),
				res.Bridge.Board, res.Bridge.CPU, res.Bridge.Wall, res.Bridge.Percent())
		})
	}
}
