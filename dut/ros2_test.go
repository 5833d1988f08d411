package dut_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/ros2/bridge"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// ros2Rack is the C example on Cyclone DDS (dut/examples/ros2imu) on a
// local board: rt/imu in, rt/cmd_vel out, echo by the header stamp.
const ros2Rack = `name: t
boards:
  - {name: a, reach: local}
duts:
  - name: ros2-imu
    board: a
    build: ./dut/examples/ros2imu
    command: [imu_node]
    inputs:
      - {name: imu, topic: imu, middleware: ros2, type: sensor_msgs/Imu, payload: 512}
    outputs:
      - {name: cmd, topic: cmd_vel, middleware: ros2, type: geometry_msgs/TwistStamped, payload: 256}
    correlation: {mode: echo, input: imu, output: cmd, offset: 4, deadline: 20ms}
    stimulus: {rate_hz: 100, count: 100}
    bounds: {max_miss_rate: 0.2}
`

func ros2DUT(t *testing.T) (*fixtures.Rack, *fixtures.DUT) {
	t.Helper()
	r, err := fixtures.ParseRack("t.yaml", []byte(ros2Rack))
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.DUT("ros2-imu")
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// The bridge's configuration the runner writes is one ros2/bridge reads:
// a to_ros topic for the input (sensor_data), a from_ros one for the
// output (default), each on the hilrig topic Measure uses.
func TestBridgeConfigLoads(t *testing.T) {
	_, d := ros2DUT(t)
	b, err := dut.BridgeConfig(d, dut.Placement{Domain: "x1"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := bridge.LoadConfig(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if c.Domain != "x1" || len(c.Topics) != 2 {
		t.Fatalf("config %+v", c)
	}
	in, out := c.Topics[0], c.Topics[1]
	if in.Direction != bridge.ToROS || in.ROS.DDSTopic() != "rt/imu" || in.ROS.Profile != rostopic.ProfileSensorData || in.Hilrig.Topic != "dut/ros2-imu/imu" || in.Hilrig.MaxPayload != 512 {
		t.Errorf("input topic %+v", in)
	}
	if out.Direction != bridge.FromROS || out.ROS.DDSType() != "geometry_msgs::msg::dds_::TwistStamped_" || out.ROS.Profile != rostopic.ProfileDefault || out.Hilrig.Topic != "dut/ros2-imu/cmd" {
		t.Errorf("output topic %+v", out)
	}
	if env := dut.Env(d, dut.Placement{Domain: "x1"}); !containsAll(env, "HILRIG_IMU_TOPIC=imu", "HILRIG_IMU_TYPE=sensor_msgs/Imu", "HILRIG_CMD_TOPIC=cmd_vel") {
		t.Errorf("env %v", env)
	}
}

func containsAll(xs []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, x := range xs {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestROS2Node: the C program on Cyclone DDS (built with Debian's idlc
// and cc), its ROS 2 topics bridged by the peer binary, answers the Imu
// stimuli with TwistStamped carrying their stamps: every answer names a
// stimulus (no unknown), most come back within the deadline, and the
// latency is the controller's receipt − the stimulus's own stamp.
func TestROS2Node(t *testing.T) {
	r, d := ros2DUT(t)
	_, pl := setup(t)
	p, err := dut.Start(t.Context(), r, d.Name, pl, &dut.Options{OutputDir: t.TempDir()})
	if errors.Is(err, dut.ErrToolMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	m, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, p.OutputTail(20))
	}
	tl := m.Tally
	t.Logf("%d stimuli: %d answered, %d missed, %d late, %d unknown, %d duplicates; p50 %d ns", tl.Stimuli, tl.Answered, tl.Missed, tl.Late, tl.Unknown, tl.Duplicates, c50(tl.Samples))
	if tl.Unknown != 0 || tl.Duplicates != 0 {
		t.Errorf("answers naming no stimulus (%d) or twice (%d): the stamp is not copied through", tl.Unknown, tl.Duplicates)
	}
	if tl.MissRate() > *d.Bounds.MaxMissRate {
		t.Errorf("miss rate %.2f above %.2f\n%s", tl.MissRate(), *d.Bounds.MaxMissRate, p.OutputTail(20))
	}
	for _, s := range tl.Samples {
		if s <= 0 {
			t.Fatalf("latency %d ns: not after the stimulus", s)
		}
	}
	c := m.Case(dut.CaseInfo{Suite: "t", Name: "ros2"})
	if c.Verdict != "pass" {
		t.Errorf("case verdict %s: %v", c.Verdict, c.Checks)
	}
	if c.Middleware != "cyclonedds" || c.Transport != "dut ros2→ros2" || c.Method.Clocks != dut.ClocksROS2 || c.PayloadBytes < 300 {
		t.Errorf("case %s on %s (%s), %d B, clocks %q", c.Name, c.Middleware, c.Transport, c.PayloadBytes, c.Method.Clocks)
	}
}

// Without Cyclone DDS's tools the C example is not built: the error
// wraps ErrToolMissing (the suites' skip) and names the tool.
func TestBuildCToolMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := dut.BuildC(t.Context(), "../", "./dut/examples/ros2imu", t.TempDir())
	if !errors.Is(err, dut.ErrToolMissing) || !strings.Contains(err.Error(), "idlc") {
		t.Errorf("BuildC without tools: %v, want ErrToolMissing naming idlc", err)
	}
}
