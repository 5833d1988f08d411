// Package rosmsg is ROS 2 message definitions and their wire encoding, as
// ROS 2 nodes on rmw_cyclonedds_cpp and rmw_fastrtps_cpp put them on DDS:
// it parses `.msg` text (primitives, nested types, fixed, bounded and
// unbounded arrays and strings, constants, defaults), resolves the
// dependencies in a Registry (the common definitions are shipped, a user
// adds their own), and encodes and decodes XCDR1 (CDR little endian,
// encapsulation header 00 01 00 00) into and out of Go values. Fixed-size
// messages also have typed Go forms (Time, Vector3, Quaternion, Point,
// Pose, Twist) that encode into a caller-owned buffer without allocating.
//
// Pure Go, no cgo; it imports nothing of the harness (docs/ros2.md).
package rosmsg

import (
	"fmt"
	"strings"
)

// Kind is a field's element type: one of the ROS 2 primitives, a string,
// or a nested message.
type Kind uint8

// The kinds. Byte and Char are one octet on the wire (rosidl maps them to
// IDL octet and uint8); WString is refused (its wire form differs between
// RMW implementations).
const (
	KindInvalid Kind = iota
	Bool
	Byte
	Char
	Int8
	Uint8
	Int16
	Uint16
	Int32
	Uint32
	Int64
	Uint64
	Float32
	Float64
	String
	Message
)

var kindNames = [...]string{
	KindInvalid: "invalid", Bool: "bool", Byte: "byte", Char: "char",
	Int8: "int8", Uint8: "uint8", Int16: "int16", Uint16: "uint16",
	Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64",
	Float32: "float32", Float64: "float64", String: "string", Message: "message",
}

// String is the kind's name in .msg text ("float64"); "message" for nested types.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// size is the wire size (and XCDR1 alignment) of a primitive kind; 0 for
// strings and messages.
func (k Kind) size() int {
	switch k {
	case Bool, Byte, Char, Int8, Uint8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

func kindFromName(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s && Kind(k) != KindInvalid && Kind(k) != Message {
			return Kind(k), true
		}
	}
	return KindInvalid, false
}

// ArrayKind says whether and how a field repeats.
type ArrayKind uint8

const (
	// NotArray: a single value.
	NotArray ArrayKind = iota
	// Fixed: exactly Len elements, no count on the wire (`T[N]`).
	Fixed
	// Bounded: a sequence of at most Len elements (`T[<=N]`).
	Bounded
	// Unbounded: a sequence (`T[]`).
	Unbounded
)

// Type is a field's type.
type Type struct {
	Kind Kind
	// Msg is the nested type's full name ("geometry_msgs/Vector3") when
	// Kind is Message.
	Msg string
	// StringBound is N of `string<=N` (0: unbounded), in bytes.
	StringBound int
	Array       ArrayKind
	// Len is N of `T[N]` or `T[<=N]`.
	Len int
}

// String is the type as .msg text ("string<=8[<=3]", "geometry_msgs/Vector3[]").
func (t Type) String() string {
	var b strings.Builder
	if t.Kind == Message {
		b.WriteString(t.Msg)
	} else {
		b.WriteString(t.Kind.String())
	}
	if t.Kind == String && t.StringBound > 0 {
		fmt.Fprintf(&b, "<=%d", t.StringBound)
	}
	switch t.Array {
	case Fixed:
		fmt.Fprintf(&b, "[%d]", t.Len)
	case Bounded:
		fmt.Fprintf(&b, "[<=%d]", t.Len)
	case Unbounded:
		b.WriteString("[]")
	}
	return b.String()
}

// Field is one data field of a message.
type Field struct {
	Name string
	Type Type
	// Default is the field's default as written in the .msg text ("" for
	// none); DefaultValue is it decoded into the field's Go value form
	// (nil for none).
	Default      string
	DefaultValue any
}

// Constant is a `TYPE NAME=value` line. Value is in the Go value form of
// its kind (see Codec: int8 for int8, float64 for float64, ...).
type Constant struct {
	Name  string
	Type  Kind
	Text  string
	Value any
}

// Definition is one parsed message type.
type Definition struct {
	Package   string // "sensor_msgs"
	Name      string // "Imu"
	Fields    []Field
	Constants []Constant
	// Text is the .msg source the definition was parsed from.
	Text string
}

// FullName is "package/Name".
func (d *Definition) FullName() string { return d.Package + "/" + d.Name }

// DDSTypeName is the type name ROS 2 registers on DDS for a message:
// "sensor_msgs::msg::dds_::Imu_".
func DDSTypeName(fullName string) string {
	pkg, name, _ := strings.Cut(fullName, "/")
	return pkg + "::msg::dds_::" + name + "_"
}

// TopicName is the DDS topic of a ROS 2 topic ("chatter" or "/chatter" →
// "rt/chatter").
func TopicName(rosTopic string) string { return "rt/" + strings.TrimPrefix(rosTopic, "/") }

// ServiceTopics are the DDS request and reply topics of a ROS 2 service
// ("add" → "rq/addRequest", "rr/addReply").
func ServiceTopics(service string) (request, reply string) {
	s := strings.TrimPrefix(service, "/")
	return "rq/" + s + "Request", "rr/" + s + "Reply"
}
