//go:build cyclonedds || fastdds

package agent

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// rosTestPeers are the registered test peers that speak ROS 2, sorted.
func rosTestPeers(t *testing.T) []string {
	names := ROS2TestPeers()
	if len(names) == 0 {
		t.Skip("no DDS peer built in (tags cyclonedds, fastdds)")
	}
	return names
}

func openROSPeer(t *testing.T, name string) PeerROS2 {
	t.Helper()
	p, err := testPeers[name]("ros2", agentproto.PeerNet{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rp, ok := p.(PeerROS2)
	if !ok {
		t.Fatalf("%s does not speak ROS 2", name)
	}
	return rp
}

// TestROS2PeerWire: a ROS 2 writer on each DDS peer and a reader on each
// (same vendor and across vendors, as ROS 2 nodes on rmw_cyclonedds_cpp
// and rmw_fastrtps_cpp meet) exchange a sensor_msgs/Imu on rt/<name>
// under the ROS type name with no type information: the reader gets the
// writer's bytes exactly, save the header stamp, which the writer set on
// the stamp clock between the test's two reads of it; every field
// decodes to what was encoded. The Go side of Write allocates nothing.
func TestROS2PeerWire(t *testing.T) {
	peers := rosTestPeers(t)
	imu := ros2test.Codec(t, "sensor_msgs/Imu")
	in := rosmsg.Msg{
		"header":                 rosmsg.Msg{"frame_id": "imu_link"},
		"orientation":            rosmsg.Msg{"x": 0.5, "y": -0.5, "z": 0.25, "w": math.Sqrt(0.4375)},
		"angular_velocity":       rosmsg.Msg{"x": 0.01, "y": 0.02, "z": -0.03},
		"linear_acceleration":    rosmsg.Msg{"x": 0.1, "y": -0.2, "z": 9.81},
		"orientation_covariance": []float64{1, 0, 0, 0, 1, 0, 0, 0, 1},
	}
	// one: writer and reader on one participant, as one agent running
	// both ends on one board does.
	for _, wn := range peers {
		for _, rn := range peers {
			for _, one := range []bool{false, true} {
				if wn != rn && (wn == "fastdds-shm" || rn == "fastdds-shm" || one) {
					continue // SHM only between Fast DDS participants
				}
				name := wn + "->" + rn
				if one {
					name += "/one-participant"
				}
				t.Run(name, func(t *testing.T) {
					topic := rostopic.Topic{Name: fmt.Sprintf("hilrig_test/imu_%d_%s_%s_%v", os.Getpid(), wn[:4], rn[:4], one), Type: "sensor_msgs/Imu"}
					wp := openROSPeer(t, wn)
					rp := wp
					if !one {
						rp = openROSPeer(t, rn)
					}
					r, err := rp.NewROS2Reader(topic.DDSTopic(), topic.DDSType(), true, 10, 1024, false)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					w, err := wp.NewROS2Writer(topic.DDSTopic(), topic.DDSType(), true, 10, 1024)
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					ros2test.AwaitMatch(t, w.(ros2test.Matcher))
					ros2test.AwaitMatch(t, r.(ros2test.Matcher))
					msg, err := imu.Append(nil, in)
					if err != nil {
						t.Fatal(err)
					}
					if len(msg) != 324 {
						t.Fatalf("Imu with frame imu_link: %d bytes, want 324", len(msg))
					}
					before := sys.Now(sys.ClockRealtime)
					if err := w.Write(msg, 1, sys.ClockRealtime); err != nil {
						t.Fatal(err)
					}
					after := sys.Now(sys.ClockRealtime)
					var got []byte
					deadline := time.Now().Add(10 * time.Second)
					for got == nil && time.Now().Before(deadline) {
						data, recv, err := r.Take(100 * time.Millisecond)
						if err != nil {
							t.Fatal(err)
						}
						if data != nil {
							if recv <= 0 {
								t.Errorf("receive stamp %d", recv)
							}
							got = slices.Clone(data)
							r.Release()
						}
					}
					if got == nil {
						t.Fatal("nothing received in 10 s")
					}
					if !slices.Equal(got, msg) {
						t.Fatalf("received %d bytes\n% x\nwant (as written, stamp included)\n% x", len(got), got, msg)
					}
					stamp, ok := rostopic.Stamp(got)
					if !ok || stamp < before || stamp > after {
						t.Errorf("header stamp %d, want within [%d, %d] (realtime around the write)", stamp, before, after)
					}
					out, err := imu.Decode(got)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range []string{"orientation", "angular_velocity", "linear_acceleration"} {
						if fmt.Sprint(out[f]) != fmt.Sprint(in[f]) {
							t.Errorf("%s: decoded %v, sent %v", f, out[f], in[f])
						}
					}
					if h := out["header"].(rosmsg.Msg); h["frame_id"] != "imu_link" {
						t.Errorf("frame_id %v", h["frame_id"])
					}
					if n := testing.AllocsPerRun(20, func() {
						if err := w.Write(msg, 2, sys.ClockRealtime); err != nil {
							t.Fatal(err)
						}
					}); n != 0 {
						t.Errorf("ROS 2 Write: %v allocs on the Go side", n)
					}
				})
			}
		}
	}
}
