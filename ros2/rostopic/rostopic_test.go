package rostopic_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

func TestProfileText(t *testing.T) {
	for _, p := range []rostopic.Profile{rostopic.ProfileDefault, rostopic.ProfileSensorData} {
		b, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var q rostopic.Profile
		if err := q.UnmarshalText(b); err != nil || q != p {
			t.Errorf("%s: round trip gave %v, %v", b, q, err)
		}
	}
	var q rostopic.Profile
	if err := q.UnmarshalText([]byte("system_default")); !errors.Is(err, rostopic.ErrProfile) {
		t.Errorf("system_default: got %v, want ErrProfile", err)
	}
	if _, err := rostopic.Profile(7).MarshalText(); err == nil {
		t.Error("profile 7 marshalled")
	}
	// The ROS 2 profiles (rmw_qos_profile_default, _sensor_data).
	if d := rostopic.ProfileDefault; !d.Reliable() || d.Depth() != 10 {
		t.Errorf("default: reliable %v depth %d, want reliable keep-last 10", d.Reliable(), d.Depth())
	}
	if s := rostopic.ProfileSensorData; s.Reliable() || s.Depth() != 5 {
		t.Errorf("sensor_data: reliable %v depth %d, want best effort keep-last 5", s.Reliable(), s.Depth())
	}
}

func TestTopicNames(t *testing.T) {
	tp := rostopic.Topic{Name: "/robot/imu", Type: "sensor_msgs/Imu"}
	if err := tp.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := tp.DDSTopic(); got != "rt/robot/imu" {
		t.Errorf("DDSTopic %q", got)
	}
	if got := tp.DDSType(); got != "sensor_msgs::msg::dds_::Imu_" {
		t.Errorf("DDSType %q", got)
	}
	for _, bad := range []rostopic.Topic{
		{Name: "imu-1", Type: "sensor_msgs/Imu"},
		{Name: "9imu", Type: "sensor_msgs/Imu"},
		{Name: "a__b", Type: "sensor_msgs/Imu"},
		{Name: "imu/", Type: "sensor_msgs/Imu"},
		{Name: "imu", Type: "Imu"},
		{Name: "imu", Type: "sensor_msgs/Imu", Profile: 9},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestTemplate(t *testing.T) {
	imu := ros2test.Codec(t, "sensor_msgs/Imu")
	n, err := rostopic.MinSize(imu)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rostopic.Template(imu, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := rostopic.PutStamp(b, 3_000_000_004); err != nil {
		t.Fatal(err)
	}
	m, err := imu.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	hdr := m["header"].(rosmsg.Msg)
	st := hdr["stamp"].(rosmsg.Msg)
	if st["sec"] != int32(3) || st["nanosec"] != uint32(4) || hdr["frame_id"] != rostopic.FrameID {
		t.Errorf("decoded header %v, want stamp {3, 4} frame %q", hdr, rostopic.FrameID)
	}
	if ns, ok := rostopic.Stamp(b); !ok || ns != 3_000_000_004 {
		t.Errorf("Stamp = %d, %v", ns, ok)
	}
	if _, err := rostopic.Template(imu, n+8); err == nil {
		t.Error("an Imu of another size was built")
	}
	// Image reaches any size at or above its minimum through its data.
	img := ros2test.Codec(t, "sensor_msgs/Image")
	b, err = rostopic.Template(img, 1<<20)
	if err != nil || len(b) != 1<<20 {
		t.Fatalf("Image at 1 MiB: %d bytes, %v", len(b), err)
	}
	if _, err := img.Decode(b); err != nil {
		t.Error(err)
	}
	if _, err := rostopic.Template(ros2test.Codec(t, "geometry_msgs/Twist"), rosmsg.TwistSize); !errors.Is(err, rostopic.ErrNoHeader) {
		t.Errorf("Twist: got %v, want ErrNoHeader", err)
	}
}

func TestStampAllocs(t *testing.T) {
	b := make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() {
		_ = rostopic.PutStamp(b, 12345)
		_, _ = rostopic.Stamp(b)
	}); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

func ExampleTopic() {
	t := rostopic.Topic{Name: "imu", Type: "sensor_msgs/Imu", Profile: rostopic.ProfileSensorData}
	fmt.Println(t.DDSTopic(), t.DDSType(), t.Profile.Describe())
	// Output: rt/imu sensor_msgs::msg::dds_::Imu_ sensor_data (best effort, keep-last 5, volatile)
}
