package ros2mcap_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// must fails t at once on err: set-up steps whose failure leaves nothing
// to check.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A ROS 2 recording as ros2 bag writes it: the schema text has the
// top-level definition, then each dependency after 80 '=' and "MSG:";
// reading it back gives a codec that decodes the payload to the value.
func TestSchemaRoundTrip(t *testing.T) {
	reg, err := rosmsg.Shipped()
	must(t, err)
	s, err := ros2mcap.Schema(reg, 1, "sensor_msgs/Imu")
	must(t, err)
	text := string(s.Data)
	if s.Name != "sensor_msgs/msg/Imu" || s.Encoding != "ros2msg" {
		t.Errorf("schema %q %q", s.Name, s.Encoding)
	}
	sep := strings.Repeat("=", 80) + "\nMSG: "
	for _, dep := range []string{"std_msgs/Header", "builtin_interfaces/Time", "geometry_msgs/Quaternion", "geometry_msgs/Vector3"} {
		if !strings.Contains(text, sep+dep+"\n") {
			t.Errorf("schema text lacks the section of %s:\n%s", dep, text)
		}
	}
	if strings.HasPrefix(text, "=") || strings.Count(text, sep) != 4 {
		t.Errorf("schema text sections:\n%s", text)
	}
	enc, err := reg.Codec("sensor_msgs/Imu")
	must(t, err)
	payload, err := enc.Append(nil, rosmsg.Msg{"header": rosmsg.Msg{"frame_id": "imu_link"}, "linear_acceleration": rosmsg.Msg{"z": 9.81}})
	must(t, err)
	var file bytes.Buffer
	w, err := mcap.NewWriter(&file, mcap.Options{Header: mcap.Header{Profile: ros2mcap.Profile}})
	must(t, err)
	must(t, w.AddSchema(s))
	must(t, w.AddChannel(ros2mcap.Channel(1, 1, "/imu", "")))
	must(t, w.WriteMessage(&mcap.Message{ChannelID: 1, LogTime: 5, PublishTime: 5, Data: payload}))
	must(t, w.Close())
	r, err := mcap.NewStreamReader(&file, mcap.Limits{})
	must(t, err)
	defer r.Close()
	m, err := r.Next()
	must(t, err)
	ch, _ := r.Channel(m.ChannelID)
	rs, _ := r.Schema(ch.SchemaID)
	if ch.MessageEncoding != "cdr" || r.Header().Profile != "ros2" {
		t.Errorf("channel %+v, header %+v", ch, r.Header())
	}
	dec, err := ros2mcap.Codec(rs)
	must(t, err)
	got, err := dec.Decode(m.Data)
	must(t, err)
	js, _ := dec.ToJSON(got)
	if !strings.Contains(string(js), `"frame_id":"imu_link"`) || !strings.Contains(string(js), `"z":9.81`) {
		t.Errorf("decoded %s", js)
	}
}

// A schema that is not ros2msg, or whose text does not parse, is refused
// with the schema named.
func TestCodecRefuses(t *testing.T) {
	for _, s := range []mcap.Schema{
		{ID: 3, Name: "a/msg/B", Encoding: "jsonschema"},
		{ID: 4, Name: "a/msg/B", Encoding: "ros2msg", Data: []byte("int32 x\nother/Missing m\n")},
		{ID: 5, Name: "a/msg/B", Encoding: "ros2msg", Data: []byte("int32 x\n" + strings.Repeat("=", 80) + "\nMSG: a/B\nint64 y\n")},
	} {
		if _, err := ros2mcap.Codec(&s); err == nil || !strings.Contains(err.Error(), "a/msg/B") {
			t.Errorf("schema %d: %v", s.ID, err)
		}
	}
}
