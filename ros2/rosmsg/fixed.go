package rosmsg

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Typed forms of the shipped fixed-size messages. EncodeCDR writes the
// header and body into a caller-owned buffer and allocates nothing (the
// hot path of a publisher); DecodeCDR reads one back. Their bytes equal
// Codec's for the same values (TestFixedMatchesCodec). These messages
// hold only float64 (and Time's int32/uint32), so every field is at a
// fixed offset: no padding past the header.

// Time is builtin_interfaces/Time: seconds and nanoseconds of ROS time.
type Time struct {
	Sec     int32
	Nanosec uint32
}

// Vector3 is geometry_msgs/Vector3.
type Vector3 struct{ X, Y, Z float64 }

// Point is geometry_msgs/Point.
type Point struct{ X, Y, Z float64 }

// Quaternion is geometry_msgs/Quaternion (its .msg default is W = 1; the
// Go zero value has W = 0, as a decoded all-zero payload does).
type Quaternion struct{ X, Y, Z, W float64 }

// Pose is geometry_msgs/Pose.
type Pose struct {
	Position    Point
	Orientation Quaternion
}

// Twist is geometry_msgs/Twist: linear and angular velocity.
type Twist struct {
	Linear, Angular Vector3
}

// Encoded sizes, header included.
const (
	TimeSize       = 4 + 8
	Vector3Size    = 4 + 24
	PointSize      = 4 + 24
	QuaternionSize = 4 + 32
	PoseSize       = 4 + 56
	TwistSize      = 4 + 48
)

func putF64s(dst []byte, need int, vs ...float64) (int, error) {
	if len(dst) < need {
		return 0, fmt.Errorf("%w: %d bytes, need %d", ErrShortBuffer, len(dst), need)
	}
	copy(dst, Header[:])
	for i, v := range vs {
		binary.LittleEndian.PutUint64(dst[4+8*i:], math.Float64bits(v))
	}
	return need, nil
}

func getF64s(typ string, b []byte, vs ...*float64) error {
	if err := checkFixed(typ, b, 4+8*len(vs)); err != nil {
		return err
	}
	for i, v := range vs {
		*v = math.Float64frombits(binary.LittleEndian.Uint64(b[4+8*i:]))
	}
	return nil
}

func checkFixed(typ string, b []byte, need int) error {
	switch {
	case len(b) < 4:
		return &DecodeError{Type: typ, Reason: fmt.Sprintf("payload of %d bytes has no 4-byte encapsulation header", len(b))}
	case b[0] != Header[0] || b[1] != Header[1]:
		return &DecodeError{Type: typ, Reason: fmt.Sprintf("encapsulation %02x %02x, want 00 01 (XCDR1, little endian)", b[0], b[1])}
	case len(b) < need:
		return &DecodeError{Type: typ, Field: "(body)", Offset: 4, Reason: fmt.Sprintf("%d bytes, need %d", len(b), need)}
	case len(b) > need+maxTrailing:
		return &DecodeError{Type: typ, Offset: need, Reason: fmt.Sprintf("%d bytes after the message end at %d", len(b)-need, need)}
	}
	return nil
}

// EncodeCDR writes t (header included) into dst and returns the bytes written.
func (t Time) EncodeCDR(dst []byte) (int, error) {
	if len(dst) < TimeSize {
		return 0, fmt.Errorf("%w: %d bytes, need %d", ErrShortBuffer, len(dst), TimeSize)
	}
	copy(dst, Header[:])
	binary.LittleEndian.PutUint32(dst[4:], uint32(t.Sec))
	binary.LittleEndian.PutUint32(dst[8:], t.Nanosec)
	return TimeSize, nil
}

// DecodeCDR reads t from a payload (header included).
func (t *Time) DecodeCDR(b []byte) error {
	if err := checkFixed("builtin_interfaces/Time", b, TimeSize); err != nil {
		return err
	}
	t.Sec = int32(binary.LittleEndian.Uint32(b[4:]))
	t.Nanosec = binary.LittleEndian.Uint32(b[8:])
	return nil
}

// EncodeCDR writes v (header included) into dst and returns the bytes written.
func (v Vector3) EncodeCDR(dst []byte) (int, error) {
	return putF64s(dst, Vector3Size, v.X, v.Y, v.Z)
}

// DecodeCDR reads v from a payload (header included).
func (v *Vector3) DecodeCDR(b []byte) error {
	return getF64s("geometry_msgs/Vector3", b, &v.X, &v.Y, &v.Z)
}

// EncodeCDR writes p (header included) into dst and returns the bytes written.
func (p Point) EncodeCDR(dst []byte) (int, error) {
	return putF64s(dst, PointSize, p.X, p.Y, p.Z)
}

// DecodeCDR reads p from a payload (header included).
func (p *Point) DecodeCDR(b []byte) error {
	return getF64s("geometry_msgs/Point", b, &p.X, &p.Y, &p.Z)
}

// EncodeCDR writes q (header included) into dst and returns the bytes written.
func (q Quaternion) EncodeCDR(dst []byte) (int, error) {
	return putF64s(dst, QuaternionSize, q.X, q.Y, q.Z, q.W)
}

// DecodeCDR reads q from a payload (header included).
func (q *Quaternion) DecodeCDR(b []byte) error {
	return getF64s("geometry_msgs/Quaternion", b, &q.X, &q.Y, &q.Z, &q.W)
}

// EncodeCDR writes p (header included) into dst and returns the bytes written.
func (p Pose) EncodeCDR(dst []byte) (int, error) {
	o := p.Orientation
	return putF64s(dst, PoseSize, p.Position.X, p.Position.Y, p.Position.Z, o.X, o.Y, o.Z, o.W)
}

// DecodeCDR reads p from a payload (header included).
func (p *Pose) DecodeCDR(b []byte) error {
	o := &p.Orientation
	return getF64s("geometry_msgs/Pose", b, &p.Position.X, &p.Position.Y, &p.Position.Z, &o.X, &o.Y, &o.Z, &o.W)
}

// EncodeCDR writes t (header included) into dst and returns the bytes written.
func (t Twist) EncodeCDR(dst []byte) (int, error) {
	l, a := t.Linear, t.Angular
	return putF64s(dst, TwistSize, l.X, l.Y, l.Z, a.X, a.Y, a.Z)
}

// DecodeCDR reads t from a payload (header included).
func (t *Twist) DecodeCDR(b []byte) error {
	l, a := &t.Linear, &t.Angular
	return getF64s("geometry_msgs/Twist", b, &l.X, &l.Y, &l.Z, &a.X, &a.Y, &a.Z)
}
