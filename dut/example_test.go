package dut_test

import (
	"fmt"
	"time"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
)

// Three stimuli 10 ms apart; the program echoes the first twice, the
// third after its deadline, never the second.
func ExampleCorrelate() {
	ms := int64(time.Millisecond)
	stimuli := []int64{0, 10 * ms, 20 * ms}
	responses := []dut.Response{
		{Mono: 1 * ms, Seq: 1},
		{Mono: 2 * ms, Seq: 1},
		{Mono: 29 * ms, Seq: 3},
	}
	t := dut.Correlate(fixtures.CorrelateEcho, stimuli, responses, 5*time.Millisecond)
	fmt.Printf("answered %d, missed %d (%.0f%%), duplicates %d, late %d, samples %v ns\n",
		t.Answered, t.Missed, 100*t.MissRate(), t.Duplicates, t.Late, t.Samples)
	// Output: answered 1, missed 2 (67%), duplicates 1, late 1, samples [1000000] ns
}

// The bridge a dut with ROS 2 ports gets beside it: the Imu input to
// ROS 2 (sensor_data), the TwistStamped output back (default QoS), each
// on a hilrig topic of the dut's own.
func ExampleBridgeConfig() {
	r, err := fixtures.ParseRack("r.yaml", []byte(`name: r
boards:
  - {name: a, reach: local}
duts:
  - name: node
    board: a
    command: [imu_node]
    inputs:
      - {name: imu, topic: imu, middleware: ros2, type: sensor_msgs/Imu, payload: 512}
    outputs:
      - {name: cmd, topic: cmd_vel, middleware: ros2, type: geometry_msgs/TwistStamped, payload: 256}
    correlation: {mode: echo, input: imu, output: cmd, offset: 4, deadline: 20ms}
    stimulus: {rate_hz: 100, count: 10}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := r.DUT("node")
	b, err := dut.BridgeConfig(d, dut.Placement{Domain: "run1"})
	fmt.Println(string(b), err)
	// Output: {"domain":"run1","topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu","profile":"sensor_data"},"hilrig":{"topic":"dut/node/imu","max_payload":512,"depth":16},"direction":"to_ros"},{"ros":{"name":"cmd_vel","type":"geometry_msgs/TwistStamped"},"hilrig":{"topic":"dut/node/cmd","max_payload":256,"depth":16},"direction":"from_ros"}]} <nil>
}
