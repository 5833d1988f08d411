package agent_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestROS2Endpoints runs a ROS 2 topic through the agent's roles on every
// DDS test peer (issue 33): a publisher and a subscriber in two agents,
// sensor_msgs/Imu at 200 Hz under the default profile (reliable) and a
// 64 KiB sensor_msgs/Image under sensor_data: the subscriber counts the
// publisher's messages in arrival order, counts every one it missed
// (received + lost = sent), and records one latency per message from the
// header stamp. Loss itself is not asserted absent: the default profile
// is reliable within its keep-last 10 only, so a reader (or an
// acknowledgement) stalled for 10 periods loses the oldest, as a ROS 2
// node does — on this shared machine 1..115 of 300 went so at 200 Hz and
// at 2 kHz, in the middle of runs, not at their start or end.
func TestROS2Endpoints(t *testing.T) {
	peers := agent.ROS2TestPeers()
	if len(peers) == 0 {
		t.Skip("no DDS peer built in (tags cyclonedds, fastdds)")
	}
	imu := ros2test.Codec(t, "sensor_msgs/Imu")
	imuSize, err := rostopic.MinSize(imu)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		typ     string
		profile rostopic.Profile
		size    int
		rate    float64
	}{
		{"sensor_msgs/Imu", rostopic.ProfileDefault, imuSize, 200},
		{"sensor_msgs/Image", rostopic.ProfileSensorData, 64 << 10, 200},
	}
	for _, mw := range peers {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%s", mw, c.typ, c.profile), func(t *testing.T) {
				const n = 300
				dir := t.TempDir()
				s, ps := startPeerSession(t, dir), startPeerSession(t, dir)
				topic := &rostopic.Topic{Name: fmt.Sprintf("hilrig_test/e2e_%d", os.Getpid()), Type: c.typ, Profile: c.profile}
				rel := middleware.BestEffort
				if c.profile.Reliable() {
					rel = middleware.Reliable
				}
				ct := middleware.Contract{Topic: "unused", MaxPayload: c.size, Reliability: rel, Depth: c.profile.Depth()}
				s.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Middleware: mw, Contract: ct, Count: n,
					IdleTimeoutNs: int64(5 * time.Second), ROS2: topic}))
				s.expect(agentproto.KindStarted)
				ps.send(agentproto.NewStart(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Middleware: mw, Contract: ct, Count: n,
					Payload: c.size, RateHz: c.rate, ROS2: topic}))
				ps.expect(agentproto.KindStarted)
				pub, sub := ps.finals("pub")["pub"], s.finals("sub")["sub"]
				if pub.Sent != n || pub.Reason != agentproto.EndCount {
					t.Fatalf("publisher: sent %d, reason %s %s", pub.Sent, pub.Reason, pub.Error)
				}
				if sub.Received+sub.Lost != n || sub.Received == 0 {
					t.Fatalf("subscriber: received %d + lost %d, want %d in all (%s %s)", sub.Received, sub.Lost, n, sub.Reason, sub.Error)
				}
				if sub.Lost > 0 {
					t.Logf("%s: %d of %d lost (receipts over %v, publisher's run %v)", c.profile.Describe(), sub.Lost, n, time.Duration(sub.DurationNs), time.Duration(pub.DurationNs))
				}
				if sub.Latency == nil || sub.Latency.Count() != int64(sub.Received) || sub.Latency.ValueAtQuantile(0) <= 0 {
					t.Errorf("latency histogram of %d (min %d, max %d) for %d messages: want one positive latency each", sub.Latency.Count(), sub.Latency.ValueAtQuantile(0), sub.Latency.ValueAtQuantile(100), sub.Received)
				}
			})
		}
	}
}

// TestROS2OnHilrigBus runs ROS 2 messages on hilrig's own bus (the side
// `hilrig bridge` forwards from and to): a publisher and a subscriber in
// two agents over shared memory, reliable, sensor_msgs/Imu and a 64 KiB
// sensor_msgs/Image. Every message arrives (hilrig's frame keeps the
// sequence, so nothing is lost unseen) and has one latency from its
// header stamp — positive, so it was read from the stamp the publisher
// wrote, not from a zeroed template.
func TestROS2OnHilrigBus(t *testing.T) {
	imuSize, err := rostopic.MinSize(ros2test.Codec(t, "sensor_msgs/Imu"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ  string
		size int
	}{{"sensor_msgs/Imu", imuSize}, {"sensor_msgs/Image", 64 << 10}} {
		t.Run(c.typ, func(t *testing.T) {
			const n = 300
			dir := t.TempDir()
			s, ps := startPeerSession(t, dir), startPeerSession(t, dir)
			topic := &rostopic.Topic{Name: "imu", Type: c.typ, Profile: rostopic.ProfileDefault}
			ct := middleware.Contract{Topic: "ros2-on-hilrig", MaxPayload: c.size, Reliability: middleware.Reliable}
			s.send(agentproto.NewStart(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Contract: ct, Count: n,
				IdleTimeoutNs: int64(5 * time.Second), ROS2: topic}))
			s.expect(agentproto.KindStarted)
			ps.send(agentproto.NewStart(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Contract: ct, Count: n,
				Payload: c.size, RateHz: 500, ROS2: topic}))
			ps.expect(agentproto.KindStarted)
			pub, sub := ps.finals("pub")["pub"], s.finals("sub")["sub"]
			if pub.Sent != n {
				t.Fatalf("publisher: sent %d, reason %s %s", pub.Sent, pub.Reason, pub.Error)
			}
			if sub.Received != n || sub.Lost != 0 {
				t.Fatalf("subscriber: received %d, lost %d, want %d and 0 (%s %s)", sub.Received, sub.Lost, n, sub.Reason, sub.Error)
			}
			if sub.Latency == nil || sub.Latency.Count() != n || sub.Latency.ValueAtQuantile(0) <= 0 || sub.Latency.ValueAtQuantile(100) > int64(10*time.Second) {
				t.Errorf("latency histogram of %d (min %d, max %d): want %d latencies from the header stamp", sub.Latency.Count(), sub.Latency.ValueAtQuantile(0), sub.Latency.ValueAtQuantile(100), n)
			}
		})
	}
}
