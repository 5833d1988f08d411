package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRos2Wired: "hilrig ros2 msg …" reaches ros2cli, and a usage mistake
// exits 2.
func TestRos2Wired(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"ros2", "msg", "show", "geometry_msgs/Twist"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "geometry_msgs::msg::dds_::Twist_") {
		t.Errorf("show Twist printed:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"ros2", "msg", "frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown sub-command: exit %d, want 2", code)
	}
}
