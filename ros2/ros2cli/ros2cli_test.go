package ros2cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/ros2/ros2cli"
)

func run(stdin string, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := ros2cli.RunWithInput(context.Background(), strings.NewReader(stdin), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"nope"}, {"msg"}, {"msg", "nope"}, {"msg", "encode"}, {"msg", "show", "a/B", "c/D"},
		{"msg", "decode", "--bogus"}, {"msg", "decode", "geometry_msgs/Twist", "zz"},
		{"msg", "encode", "geometry_msgs/Twist", "{}", "extra"},
	} {
		if _, _, err := run("", args...); !errors.Is(err, ros2cli.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", args, err)
		}
	}
}

// TestEncodeDecodeImu: the worked Imu layout through the command
// line, and back.
func TestEncodeDecodeImu(t *testing.T) {
	out, _, err := run(`{"header":{"stamp":{"sec":1,"nanosec":2},"frame_id":"imu_link"}}`, "msg", "encode", "sensor_msgs/msg/Imu")
	if err != nil {
		t.Fatal(err)
	}
	h := strings.TrimSpace(out)
	if len(h) != 2*324 || !strings.HasPrefix(h, "00010000010000000200000009000000696d755f6c696e6b00000000") || h[104:120] != "000000000000f03f" {
		t.Fatalf("encode: %s", h)
	}
	js, _, err := run("", "msg", "decode", "sensor_msgs/Imu", h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(js, `{"header":{"stamp":{"sec":1,"nanosec":2},"frame_id":"imu_link"},"orientation":{"x":0,"y":0,"z":0,"w":1},`) {
		t.Errorf("decode: %s", js)
	}
	raw, _, err := run(`{"linear":{"x":1}}`, "msg", "encode", "--raw", "geometry_msgs/Twist", "-")
	if err != nil || len(raw) != 52 {
		t.Fatalf("encode --raw: %d bytes, %v", len(raw), err)
	}
	js, _, err = run(raw, "msg", "decode", "--raw", "geometry_msgs/Twist")
	if err != nil || strings.TrimSpace(js) != `{"linear":{"x":1,"y":0,"z":0},"angular":{"x":0,"y":0,"z":0}}` {
		t.Errorf("decode --raw: %s %v", js, err)
	}
	_, _, err = run("", "msg", "decode", "sensor_msgs/Imu", h[:200])
	if err == nil || !strings.Contains(err.Error(), "field orientation_covariance") || !strings.Contains(err.Error(), "at offset") {
		t.Errorf("truncated payload: %v", err)
	}
}

func TestShowAndMsgPath(t *testing.T) {
	out, _, err := run("", "msg", "show")
	if err != nil || !strings.Contains(out, "nav_msgs/Odometry\n") || strings.Count(out, "\n") != 19 {
		t.Errorf("show: %v\n%s", err, out)
	}
	out, _, err = run("", "msg", "show", "geometry_msgs/Twist")
	if err != nil || !strings.Contains(out, "geometry_msgs::msg::dds_::Twist_") || !strings.Contains(out, "fixed size: 52 bytes") ||
		!strings.Contains(out, "MSG: geometry_msgs/Vector3\nfloat64 x") {
		t.Errorf("show Twist: %v\n%s", err, out)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "my_msgs", "msg", "Pair.msg")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("int64 a\ngeometry_msgs/Vector3 v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(`{"a":"-9007199254740993"}`, "msg", "encode", "--msg-path", dir, "my_msgs/Pair")
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := run("", "msg", "decode", "--msg-path", dir, "my_msgs/Pair", out)
	if err != nil || !strings.Contains(js, `"a":"-9007199254740993"`) {
		t.Errorf("int64 past 2^53 through encode/decode: %s %v", js, err)
	}
}
