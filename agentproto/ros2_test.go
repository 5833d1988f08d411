package agentproto_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestStartROS2: a ROS 2 topic rides a start as typed values (the
// profile's text decoded once), and Validate refuses what a typed
// message cannot carry.
func TestStartROS2(t *testing.T) {
	ros := func(mut func(*agentproto.Start)) agentproto.Start {
		s := agentproto.Start{
			Endpoint: "imu-pub", Role: agentproto.Publisher, Middleware: "cyclonedds",
			Contract: middleware.Contract{Topic: "imu", MaxPayload: 1024, Reliability: middleware.BestEffort},
			Payload:  320, RateHz: 1000, Count: 100,
			ROS2: &rostopic.Topic{Name: "imu", Type: "sensor_msgs/Imu", Profile: rostopic.ProfileSensorData},
		}
		if mut != nil {
			mut(&s)
		}
		return s
	}
	s := ros(nil)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ros2":{"name":"imu","type":"sensor_msgs/Imu","profile":"sensor_data"}`) {
		t.Errorf("wire form %s", b)
	}
	var back agentproto.Start
	if err := json.Unmarshal(b, &back); err != nil || *back.ROS2 != *s.ROS2 {
		t.Fatalf("read back %+v, %v", back.ROS2, err)
	}
	if err := json.Unmarshal([]byte(strings.Replace(string(b), "sensor_data", "services_default", 1)), &back); err == nil {
		t.Error("an unknown profile was accepted")
	}
	// On hilrig's own bus (the bridge's side) the same rules hold.
	if h := ros(func(s *agentproto.Start) { s.Middleware = "" }); h.Validate() != nil {
		t.Errorf("a ROS 2 message on hilrig's bus: %v", h.Validate())
	}
	for name, bad := range map[string]agentproto.Start{
		"hilrig tiny": ros(func(s *agentproto.Start) { s.Middleware = ""; s.Payload = 8 }),
		"pinger": ros(func(s *agentproto.Start) {
			s.Role = agentproto.Pinger
			s.Echo = &agentproto.EchoSpec{Reply: middleware.Contract{Topic: "r", MaxPayload: 1024}}
		}),
		"name":     ros(func(s *agentproto.Start) { s.ROS2.Name = "imu-1" }),
		"tiny":     ros(func(s *agentproto.Start) { s.Payload = 8 }),
		"too big":  ros(func(s *agentproto.Start) { s.Payload = 2048 }),
		"type":     ros(func(s *agentproto.Start) { s.ROS2.Type = "Imu" }),
		"max tiny": ros(func(s *agentproto.Start) { s.Contract.MaxPayload = 8; s.Payload = 8 }),
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: validated", name)
		} else if !strings.Contains(err.Error(), "ros2") && !strings.Contains(err.Error(), "payload") {
			t.Errorf("%s: %v does not name the field", name, err)
		}
	}
}
