// Package rostopic declares a ROS 2 topic that a DDS peer endpoint speaks
// (issue 33, scope 2): its ROS name, its message type and its QoS profile,
// decoded once from the text a rack, a configuration, a bench flag or the
// agent protocol carries, and the DDS names and message bytes that follow
// from them by ROS 2's conventions (docs/ros2.md): topic "rt/<name>", type
// "<pkg>::msg::dds_::<Name>_", XCDR1, unkeyed, no type information.
//
// Pure Go, no cgo; it builds on ros2/rosmsg and imports nothing of the
// harness. Values are plain data, safe for concurrent use.
package rostopic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// Profile is a ROS 2 QoS profile (rclcpp's rmw_qos_profile_*): the one
// decision a ROS 2 user makes about a topic's QoS. The zero value is
// ProfileDefault.
type Profile uint8

// Profiles.
const (
	// ProfileDefault is rmw_qos_profile_default: reliable, keep-last 10,
	// volatile.
	ProfileDefault Profile = iota
	// ProfileSensorData is rmw_qos_profile_sensor_data: best effort,
	// keep-last 5, volatile.
	ProfileSensorData
)

// String is the profile's name as configurations write it: "default",
// "sensor_data" ("profile(N)" outside the enumeration).
func (p Profile) String() string {
	switch p {
	case ProfileDefault:
		return "default"
	case ProfileSensorData:
		return "sensor_data"
	}
	return fmt.Sprintf("profile(%d)", uint8(p))
}

// MarshalText is String; a value outside the enumeration is an error.
func (p Profile) MarshalText() ([]byte, error) {
	if p > ProfileSensorData {
		return nil, fmt.Errorf("rostopic: %v: no such QoS profile", p)
	}
	return []byte(p.String()), nil
}

// ErrProfile is matched (errors.Is) by every refusal of a profile's text.
var ErrProfile = errors.New("rostopic: unknown QoS profile")

// UnmarshalText reads "default" (or "", a field left out) and
// "sensor_data"; anything else is an error naming the profiles.
func (p *Profile) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "default":
		*p = ProfileDefault
	case "sensor_data":
		*p = ProfileSensorData
	default:
		return fmt.Errorf("%w %q: want default or sensor_data", ErrProfile, b)
	}
	return nil
}

// Reliable reports whether the profile's reliability is RELIABLE (else
// BEST_EFFORT).
func (p Profile) Reliable() bool { return p == ProfileDefault }

// Depth is the profile's KEEP_LAST history depth.
func (p Profile) Depth() int {
	if p == ProfileSensorData {
		return 5
	}
	return 10
}

// Describe is the profile's QoS in one line, for a case's method.
func (p Profile) Describe() string {
	r := "best effort"
	if p.Reliable() {
		r = "reliable"
	}
	return fmt.Sprintf("%s (%s, keep-last %d, volatile)", p, r, p.Depth())
}

// Topic is one ROS 2 topic as a peer endpoint declares it.
type Topic struct {
	// Name is the ROS 2 topic name, absolute or relative ("imu",
	// "/robot/imu"); the DDS topic is "rt/" + Name without its leading
	// slash.
	Name string `json:"name" yaml:"name"`
	// Type is the message type's full name ("sensor_msgs/Imu"), shipped
	// (rosmsg.ShippedNames) or added by the user.
	Type string `json:"type" yaml:"type"`
	// Profile is the QoS profile; default "default".
	Profile Profile `json:"profile,omitempty" yaml:"profile,omitempty"`
}

var (
	// ROS 2 names (design article "Topic and Service name mapping"):
	// tokens of [A-Za-z0-9_] not starting with a digit, separated by
	// single slashes, no "__", no trailing slash.
	nameRE = regexp.MustCompile(`^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$`)
	typeRE = regexp.MustCompile(`^[a-z][a-z0-9_]*/[A-Z][A-Za-z0-9]*$`)
)

// Validate checks the name's and the type's form and the profile; whether
// the type is known is the registry's answer (Codec).
func (t Topic) Validate() error {
	if !nameRE.MatchString(t.Name) || strings.Contains(t.Name, "__") || len(t.Name) > 200 {
		return fmt.Errorf("rostopic: name %q: want a ROS 2 topic name (tokens of [A-Za-z0-9_] separated by '/', no \"__\")", t.Name)
	}
	if !typeRE.MatchString(t.Type) {
		return fmt.Errorf("rostopic: %s: type %q: want package/Name (\"sensor_msgs/Imu\")", t.Name, t.Type)
	}
	if t.Profile > ProfileSensorData {
		return fmt.Errorf("rostopic: %s: %v: no such QoS profile", t.Name, t.Profile)
	}
	return nil
}

// DDSTopic is the DDS topic name ("rt/imu").
func (t Topic) DDSTopic() string { return rosmsg.TopicName(t.Name) }

// DDSType is the DDS type name ("sensor_msgs::msg::dds_::Imu_").
func (t Topic) DDSType() string { return rosmsg.DDSTypeName(t.Type) }

// String is "name [type, profile]".
func (t Topic) String() string { return fmt.Sprintf("%s [%s, %s]", t.Name, t.Type, t.Profile) }

// StampOffset is the byte offset, in a payload (encapsulation header
// included), of the std_msgs/Header stamp of a type whose first field is
// its header: builtin_interfaces/Time{int32 sec, uint32 nanosec} right
// after the 4-byte encapsulation header. Every shipped stamped type
// (Imu, Image, PointCloud2, Odometry, …) starts with it.
const StampOffset = 4

// StampBytes is the size of a builtin_interfaces/Time on the wire.
const StampBytes = 8

// FrameID is the frame_id of the messages hilrig sends.
const FrameID = "hilrig"

// ErrNoHeader: a type whose first field is not a std_msgs/Header has no
// stamp a latency measurement can ride in.
var ErrNoHeader = errors.New("rostopic: the type's first field is not a std_msgs/Header (no stamp to carry the send time)")

// Stamped reports whether c's messages start with a std_msgs/Header, so
// the send stamp rides at StampOffset.
func Stamped(c *rosmsg.Codec) bool {
	f := c.Definition().Fields
	return len(f) > 0 && f[0].Type.Kind == rosmsg.Message && f[0].Type.Msg == "std_msgs/Header" && f[0].Type.Array == rosmsg.NotArray
}

// Template is the message a publisher of c's type sends, encoded once
// (header included) at payload bytes: every field at its default, the
// header's frame_id FrameID, and, when the type has a top-level unbounded
// uint8 sequence named "data" (Image, CompressedImage, PointCloud2), that
// sequence sized so the encoding is payload bytes. A type without one
// has one size, and a payload of another size is an error naming it.
// The type must be Stamped (ErrNoHeader).
func Template(c *rosmsg.Codec, payload int) ([]byte, error) {
	if !Stamped(c) {
		return nil, fmt.Errorf("%s: %w", c.Name(), ErrNoHeader)
	}
	m := rosmsg.Msg{"header": rosmsg.Msg{"frame_id": FrameID}}
	b, err := c.Append(nil, m)
	if err != nil {
		return nil, fmt.Errorf("rostopic: %s: %w", c.Name(), err)
	}
	if len(b) == payload {
		return b, nil
	}
	if !hasData(c) {
		return nil, fmt.Errorf("rostopic: %s encodes to %d bytes, not %d: a ROS 2 topic's payload is its message's size", c.Name(), len(b), payload)
	}
	// The empty data sequence encodes as its 4-byte count (aligned);
	// each data byte adds one.
	if payload < len(b) {
		return nil, fmt.Errorf("rostopic: %s encodes to at least %d bytes, not %d", c.Name(), len(b), payload)
	}
	m["data"] = make([]uint8, payload-len(b))
	if b, err = c.Append(nil, m); err != nil {
		return nil, fmt.Errorf("rostopic: %s: %w", c.Name(), err)
	}
	if len(b) != payload {
		return nil, fmt.Errorf("rostopic: %s: a %d-byte payload is not reachable (got %d: the data field is not last)", c.Name(), payload, len(b))
	}
	return b, nil
}

// hasData: c's type has a top-level unbounded uint8 (or byte) sequence
// "data".
func hasData(c *rosmsg.Codec) bool {
	for _, f := range c.Definition().Fields {
		if f.Name == "data" && f.Type.Array == rosmsg.Unbounded && (f.Type.Kind == rosmsg.Uint8 || f.Type.Kind == rosmsg.Byte) {
			return true
		}
	}
	return false
}

// MinSize is the smallest payload a publisher of c's type can send
// (Template at its default size).
func MinSize(c *rosmsg.Codec) (int, error) {
	b, err := c.Append(nil, rosmsg.Msg{"header": rosmsg.Msg{"frame_id": FrameID}})
	if err != nil {
		return 0, fmt.Errorf("rostopic: %s: %w", c.Name(), err)
	}
	return len(b), nil
}

// PutStamp writes ns (on any clock, ≥ 0) as the header stamp of payload b:
// sec = ns / 1e9 (int32), nanosec = ns % 1e9. 0 allocations.
func PutStamp(b []byte, ns int64) error {
	if len(b) < StampOffset+StampBytes {
		return fmt.Errorf("rostopic: payload of %d bytes has no header stamp", len(b))
	}
	binary.LittleEndian.PutUint32(b[StampOffset:], uint32(int32(ns/1e9)))
	binary.LittleEndian.PutUint32(b[StampOffset+4:], uint32(ns%1e9))
	return nil
}

// Stamp reads the header stamp of payload b as ns; false when b is too
// short or the nanosec field is out of range (≥ 1e9). 0 allocations.
func Stamp(b []byte) (int64, bool) {
	if len(b) < StampOffset+StampBytes {
		return 0, false
	}
	sec := int32(binary.LittleEndian.Uint32(b[StampOffset:]))
	nsec := binary.LittleEndian.Uint32(b[StampOffset+4:])
	if nsec >= 1e9 {
		return 0, false
	}
	return int64(sec)*1e9 + int64(nsec), true
}
