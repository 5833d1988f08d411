package bridgeconf_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

func TestLoad(t *testing.T) {
	f := t.TempDir() + "/bridge.json"
	if err := os.WriteFile(f, []byte(`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu","profile":"sensor_data"},
"hilrig":{"topic":"imu","max_payload":1024,"transport":"udp","reliable":true},"direction":"to_ros"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := bridgeconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if tp := c.Topics[0]; tp.ROS.Profile != rostopic.ProfileSensorData || tp.Direction != bridgeconf.ToROS || tp.Hilrig.Contract().MaxPayload != 1024 ||
		tp.Hilrig.Contract().Transport != middleware.TransportUDP || tp.Hilrig.Contract().Reliability != middleware.Reliable {
		t.Errorf("decoded %+v", tp)
	}
	for _, bad := range []string{
		`{"topics":[]}`,
		`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu"},"hilrig":{"topic":"imu","max_payload":1024},"direction":"sideways"}]}`,
		`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu","profile":"fast"},"hilrig":{"topic":"imu","max_payload":1024}}]}`,
		`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu"},"hilrig":{"topic":"imu"}}]}`,
		`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu"},"hilrig":{"topic":"imu","max_payload":1024}}],"extra":1}`,
		`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu"},"hilrig":{"topic":"imu","max_payload":1024,"transport":"tcp"}}]}`,
	} {
		if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := bridgeconf.Load(f); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: got %v, want an error naming the file", bad, err)
		}
	}
}

// TestWriteFile: what the controller writes for a bridge it starts is
// what the bridge loads; an invalid configuration is not written.
func TestWriteFile(t *testing.T) {
	f := t.TempDir() + "/bridge.json"
	c := bridgeconf.Config{Domain: "rig7", Topics: []bridgeconf.Topic{{
		ROS:       rostopic.Topic{Name: "imu", Type: "sensor_msgs/Imu", Profile: rostopic.ProfileSensorData},
		Hilrig:    bridgeconf.Hilrig{Topic: "hilrig/rig7/imu", Transport: bridgeconf.UDP, MaxPayload: 324, UDP: middleware.UDPConfig{Listen: "10.0.0.2:7000"}},
		Direction: bridgeconf.FromROS,
	}}}
	if err := c.WriteFile(f); err != nil {
		t.Fatal(err)
	}
	back, err := bridgeconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*back, c) {
		t.Errorf("loaded %+v, wrote %+v", *back, c)
	}
	c.Topics[0].Hilrig.MaxPayload = 0
	if err := c.WriteFile(t.TempDir() + "/bad.json"); err == nil {
		t.Error("an invalid configuration was written")
	}
}
