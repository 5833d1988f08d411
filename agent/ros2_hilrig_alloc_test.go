package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestROS2HilrigAllocs: a ROS 2 message on hilrig's bus is stamped and
// sent, and received with its stamp read back, without allocating; the
// subscriber sees the publisher's stamp as the send time.
func TestROS2HilrigAllocs(t *testing.T) {
	node, err := middleware.OpenNode("ros2-alloc", &middleware.NodeOptions{ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	codec := ros2test.Codec(t, "sensor_msgs/Imu")
	size, err := rostopic.MinSize(codec)
	if err != nil {
		t.Fatal(err)
	}
	s := agentproto.Start{Payload: size, ROS2: &rostopic.Topic{Name: "imu", Type: "sensor_msgs/Imu"}}
	x := endpoints{node: node, s: &s}
	c := middleware.Contract{Topic: "ros2-alloc", MaxPayload: size, Depth: 2048, Reliability: middleware.BestEffort}
	in, err := x.rosHilrigIn(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.close)
	out, err := x.rosHilrigOut(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(out.close)
	before := sys.Now(sys.ClockRealtime)
	if allocs := testing.AllocsPerRun(1000, func() {
		if err := out.send(nil, 0); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("send allocates %v per message, want 0", allocs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := 0
	var first *middleware.Header
	err = in.receive(ctx, func(m *middleware.Message) error {
		got++
		if first == nil {
			h := m.Header
			first = &h
			allocs := testing.AllocsPerRun(100, func() { _, _ = rostopic.Stamp(m.Payload); _ = clockOffset(sys.ClockRealtime) })
			if allocs != 0 {
				t.Errorf("reading the stamp allocates %v, want 0", allocs)
			}
		}
		if got == 1001 { // AllocsPerRun's warm-up call + 1000
			cancel()
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if got != 1001 || first == nil {
		t.Fatalf("received %d of 1001", got)
	}
	if first.SendClock < before || first.SendClock > sys.Now(sys.ClockRealtime) {
		t.Errorf("send stamp %d not the publisher's header stamp (after %d)", first.SendClock, before)
	}
}
