package rosmsg

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func shipped(t testing.TB) *Registry {
	t.Helper()
	r, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func codec(t testing.TB, r *Registry, name string) *Codec {
	t.Helper()
	c, err := r.Codec(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var wantShipped = []string{
	"builtin_interfaces/Time", "geometry_msgs/Point", "geometry_msgs/Pose", "geometry_msgs/PoseStamped",
	"geometry_msgs/PoseWithCovariance", "geometry_msgs/Quaternion", "geometry_msgs/Twist",
	"geometry_msgs/TwistStamped", "geometry_msgs/TwistWithCovariance", "geometry_msgs/Vector3",
	"nav_msgs/Odometry", "sensor_msgs/CompressedImage", "sensor_msgs/Image", "sensor_msgs/Imu",
	"sensor_msgs/JointState", "sensor_msgs/LaserScan", "sensor_msgs/PointCloud2", "sensor_msgs/PointField",
	"std_msgs/Header",
}

// TestShippedResolve: every shipped type parses and resolves.
func TestShippedResolve(t *testing.T) {
	r := shipped(t)
	if got := r.Names(); !reflect.DeepEqual(got, wantShipped) {
		t.Fatalf("shipped = %v\nwant      %v", got, wantShipped)
	}
	for _, n := range wantShipped {
		codec(t, r, n)
	}
	pf, _ := r.Definition("sensor_msgs/PointField")
	if len(pf.Constants) != 8 || pf.Constants[7].Name != "FLOAT64" || pf.Constants[7].Value != uint8(8) {
		t.Errorf("PointField constants = %+v", pf.Constants)
	}
	q, _ := r.Definition("geometry_msgs/msg/Quaternion")
	if q.Fields[3].DefaultValue != 1.0 {
		t.Errorf("Quaternion w default = %v, want 1", q.Fields[3].DefaultValue)
	}
}

// The worked layouts of issue 33, 4(c).
func TestLayoutImu(t *testing.T) {
	c := codec(t, shipped(t), "sensor_msgs/Imu")
	m := Msg{"header": Msg{"stamp": Msg{"sec": int32(1), "nanosec": uint32(2)}, "frame_id": "imu_link"}}
	b, err := c.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 324 {
		t.Errorf("Imu with frame_id imu_link: %d bytes, want 324", len(b))
	}
	wantStart, _ := hex.DecodeString("00010000" + "01000000" + "02000000" + "09000000" + "696d755f6c696e6b00" + "000000")
	if !bytes.HasPrefix(b, wantStart) || len(wantStart) != 28 {
		t.Errorf("Imu starts % x\nwant          % x", b[:28], wantStart)
	}
	// orientation left out: the .msg default w = 1.
	if w := b[52:60]; !bytes.Equal(w, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) {
		t.Errorf("orientation.w at 52-59 = % x, want 00 00 00 00 00 00 f0 3f", w)
	}
	// The two frame_ids both end where 4- and 8-byte alignment
	// agree; a 7-byte one ends at body offset 20, so the orientation's
	// float64 must skip to 24 (a 4-aligning writer would give 320 bytes).
	m["header"].(Msg)["frame_id"] = "base_ln"
	if b, _ = c.Append(nil, m); len(b) != 324 || !bytes.Equal(b[24:28], []byte{0, 0, 0, 0}) {
		t.Errorf("Imu with a 7-byte frame_id: %d bytes, want 324 with padding at 24-27", len(b))
	}
	m["header"].(Msg)["frame_id"] = ""
	if b, _ = c.Append(nil, m); len(b) != 316 {
		t.Errorf("Imu with empty frame_id: %d bytes, want 316", len(b))
	}
	back, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if o := back["orientation"].(Msg); o["w"] != 1.0 {
		t.Errorf("decoded orientation = %v", o)
	}
}

func TestLayoutTwist(t *testing.T) {
	c := codec(t, shipped(t), "geometry_msgs/Twist")
	b, err := c.Append(nil, Msg{"linear": Msg{"x": 1.5}, "angular": Msg{"x": -2.0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 52 {
		t.Fatalf("Twist: %d bytes, want 52", len(b))
	}
	f := func(off int) float64 {
		return math.Float64frombits(binary.LittleEndian.Uint64(b[off:]))
	}
	if f(4) != 1.5 || f(28) != -2.0 {
		t.Errorf("linear.x at 4 = %v, angular.x at 28 = %v; want 1.5, -2", f(4), f(28))
	}
	if n, ok := c.FixedSize(); !ok || n != 52 {
		t.Errorf("FixedSize = %d, %v", n, ok)
	}
	if _, ok := codec(t, shipped(t), "sensor_msgs/Imu").FixedSize(); ok {
		t.Error("Imu reported fixed-size")
	}
}

// TestParse covers the .msg grammar the shipped files do not use.
func TestParse(t *testing.T) {
	d, err := Parse("my_pkg", "All", `
# comment
bool b true
string<=5 s "a#b"   # quoted '#' is not a comment
int32[3] fixed [1, -2, 3]
int64[<=2] bounded
string<=3[<=2] names ['ab', 'c']
Other[] others
Header h
uint64 BIG=18446744073709551615
string GREETING = hello world
float32 f 0.5
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bool", "string<=5", "int32[3]", "int64[<=2]", "string<=3[<=2]", "my_pkg/Other[]", "std_msgs/Header", "float32"}
	for i, f := range d.Fields {
		if f.Type.String() != want[i] {
			t.Errorf("field %s type %s, want %s", f.Name, f.Type, want[i])
		}
	}
	if d.Fields[1].DefaultValue != "a#b" || !reflect.DeepEqual(d.Fields[2].DefaultValue, []int32{1, -2, 3}) ||
		!reflect.DeepEqual(d.Fields[4].DefaultValue, []string{"ab", "c"}) || d.Fields[7].DefaultValue != float32(0.5) {
		t.Errorf("defaults: %#v %#v %#v %#v", d.Fields[1].DefaultValue, d.Fields[2].DefaultValue, d.Fields[4].DefaultValue, d.Fields[7].DefaultValue)
	}
	if d.Constants[0].Value != uint64(math.MaxUint64) || d.Constants[1].Value != "hello world" {
		t.Errorf("constants %+v", d.Constants)
	}
	for _, bad := range []string{"int33 x", "int8 x 300", "string<=2 s 'abc'", "int32[2] a [1]", "wstring w", "Foo", "int8 Bad", "int8 lower=1", "int8 x\nint8 x", "Vec3 v 1"} {
		if _, err := Parse("p", "M", bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestUserMsgFile: a user's .msg file beside the shipped ones, with a
// missing dependency named, a self-containing type refused, and encoding
// and bounds checked.
func TestUserMsgFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "my_pkg", "msg", "Reading.msg")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("std_msgs/Header header\nstring<=4 unit\nfloat32[<=2] v\nMissing m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := shipped(t)
	if err := r.AddFile(p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Codec("my_pkg/Reading"); err == nil || !strings.Contains(err.Error(), "my_pkg/Reading needs my_pkg/Missing") {
		t.Fatalf("missing dependency: %v", err)
	}
	if err := r.AddText("my_pkg/Missing", "Missing again\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Codec("my_pkg/Reading"); err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Fatalf("cycle: %v", err)
	}
	r2 := shipped(t)
	_ = r2.AddFile(p)
	_ = r2.AddText("my_pkg/Missing", "")
	c := codec(t, r2, "my_pkg/Reading")
	if _, err := c.Append(nil, Msg{"unit": "volts"}); err == nil || !strings.Contains(err.Error(), "field unit: 5 bytes, bound is 4") {
		t.Errorf("string bound: %v", err)
	}
	if _, err := c.Append(nil, Msg{"v": []float32{1, 2, 3}}); err == nil || !strings.Contains(err.Error(), "bound is 2") {
		t.Errorf("sequence bound: %v", err)
	}
	b, err := c.Append(nil, Msg{"unit": "V", "v": []float32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if m["unit"] != "V" || !reflect.DeepEqual(m["v"], []float32{1, 2}) || len(m["m"].(Msg)) != 0 {
		t.Errorf("decoded %v", m)
	}
	// The empty message is one byte (rosidl's structure_needs_at_least_one_member).
	// header 4, stamp 8, frame_id "" 4+1 (pad 3), unit "V" 4+2 (pad 2),
	// count 4, two float32 8, the empty message 1.
	if n := len(b); n != 4+8+5+3+6+2+4+8+1 {
		t.Errorf("encoded %d bytes: % x", n, b)
	}
	txt, err := r2.FullText("my_pkg/Reading")
	if err != nil || !strings.Contains(txt, "\nMSG: std_msgs/Header\n") || !strings.Contains(txt, "\nMSG: builtin_interfaces/Time\n") {
		t.Errorf("FullText: %v\n%s", err, txt)
	}
}

// TestDecodeErrorsNameFieldAndOffset: a truncated and a lying payload.
func TestDecodeErrorsNameFieldAndOffset(t *testing.T) {
	c := codec(t, shipped(t), "sensor_msgs/Imu")
	b, _ := c.Append(nil, Msg{"header": Msg{"frame_id": "imu_link"}})
	var de *DecodeError
	_, err := c.Decode(b[:100])
	if !errors.As(err, &de) || de.Field != "orientation_covariance[5]" || de.Offset != 100 {
		t.Errorf("truncated: %v (%+v)", err, de)
	}
	bad := bytes.Clone(b)
	copy(bad[12:], []byte{0xff, 0xff, 0xff, 0x7f}) // frame_id length
	_, err = c.Decode(bad)
	if !errors.As(err, &de) || de.Field != "header.frame_id" || de.Offset != 12 {
		t.Errorf("long string: %v (%+v)", err, de)
	}
	js := codec(t, shipped(t), "sensor_msgs/JointState")
	b, _ = js.Append(nil, Msg{})
	b[20], b[21], b[22], b[23] = 0xff, 0xff, 0xff, 0x7f // name count
	if _, err = js.Decode(b); !errors.As(err, &de) || de.Field != "name" || !strings.Contains(err.Error(), "cannot fit") {
		t.Errorf("huge count: %v", err)
	}
}

func TestDDSNames(t *testing.T) {
	if g := DDSTypeName("sensor_msgs/Imu"); g != "sensor_msgs::msg::dds_::Imu_" {
		t.Error(g)
	}
	if g := TopicName("/imu"); g != "rt/imu" {
		t.Error(g)
	}
	if rq, rr := ServiceTopics("add_two_ints"); rq != "rq/add_two_intsRequest" || rr != "rr/add_two_intsReply" {
		t.Error(rq, rr)
	}
}

// TestFixedMatchesCodec: the typed encoders write Codec's bytes, and read
// them back, over random values.
func TestFixedMatchesCodec(t *testing.T) {
	r := shipped(t)
	rng := rand.New(rand.NewPCG(1, 2))
	f := func() float64 { return math.Float64frombits(rng.Uint64()&^(0x7ff<<52)) * float64(rng.IntN(3)-1) }
	buf := make([]byte, 64)
	for range 200 {
		tw := Twist{Vector3{f(), f(), f()}, Vector3{f(), f(), f()}}
		po := Pose{Point{f(), f(), f()}, Quaternion{f(), f(), f(), f()}}
		tm := Time{rng.Int32() - rng.Int32(), rng.Uint32()}
		cases := []struct {
			name string
			enc  func([]byte) (int, error)
			m    Msg
			dec  func([]byte) (any, error)
			want any
		}{
			{"geometry_msgs/Twist", tw.EncodeCDR,
				Msg{"linear": Msg{"x": tw.Linear.X, "y": tw.Linear.Y, "z": tw.Linear.Z}, "angular": Msg{"x": tw.Angular.X, "y": tw.Angular.Y, "z": tw.Angular.Z}},
				func(b []byte) (any, error) { var v Twist; return v, v.DecodeCDR(b) }, tw},
			{"geometry_msgs/Pose", po.EncodeCDR,
				Msg{"position": Msg{"x": po.Position.X, "y": po.Position.Y, "z": po.Position.Z}, "orientation": Msg{"x": po.Orientation.X, "y": po.Orientation.Y, "z": po.Orientation.Z, "w": po.Orientation.W}},
				func(b []byte) (any, error) { var v Pose; return v, v.DecodeCDR(b) }, po},
			{"geometry_msgs/Vector3", tw.Linear.EncodeCDR, Msg{"x": tw.Linear.X, "y": tw.Linear.Y, "z": tw.Linear.Z},
				func(b []byte) (any, error) { var v Vector3; return v, v.DecodeCDR(b) }, tw.Linear},
			{"geometry_msgs/Point", po.Position.EncodeCDR, Msg{"x": po.Position.X, "y": po.Position.Y, "z": po.Position.Z},
				func(b []byte) (any, error) { var v Point; return v, v.DecodeCDR(b) }, po.Position},
			{"geometry_msgs/Quaternion", po.Orientation.EncodeCDR, Msg{"x": po.Orientation.X, "y": po.Orientation.Y, "z": po.Orientation.Z, "w": po.Orientation.W},
				func(b []byte) (any, error) { var v Quaternion; return v, v.DecodeCDR(b) }, po.Orientation},
			{"builtin_interfaces/Time", tm.EncodeCDR, Msg{"sec": tm.Sec, "nanosec": tm.Nanosec},
				func(b []byte) (any, error) { var v Time; return v, v.DecodeCDR(b) }, tm},
		}
		for _, tc := range cases {
			want, err := codec(t, r, tc.name).Append(nil, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			n, err := tc.enc(buf)
			if err != nil || !bytes.Equal(buf[:n], want) {
				t.Fatalf("%s: typed % x (%v)\ncodec % x", tc.name, buf[:n], err, want)
			}
			if sz, _ := codec(t, r, tc.name).FixedSize(); sz != n {
				t.Fatalf("%s: FixedSize %d, wrote %d", tc.name, sz, n)
			}
			got, err := tc.dec(want)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s: decoded %+v (%v), want %+v", tc.name, got, err, tc.want)
			}
			if _, err := tc.enc(buf[:n-1]); !errors.Is(err, ErrShortBuffer) {
				t.Fatalf("%s: short buffer: %v", tc.name, err)
			}
			if _, err := tc.dec(want[:n-1]); err == nil {
				t.Fatalf("%s: decoded a truncated payload", tc.name)
			}
		}
	}
}

// TestFixedEncodeZeroAllocs: a publisher's hot path encodes a fixed-size
// message into its own buffer without allocating.
func TestFixedEncodeZeroAllocs(t *testing.T) {
	buf := make([]byte, 64)
	tw := Twist{Linear: Vector3{X: 1}, Angular: Vector3{Z: 2}}
	po := Pose{Orientation: Quaternion{W: 1}}
	tm := Time{Sec: 1, Nanosec: 2}
	var sink int
	allocs := testing.AllocsPerRun(1000, func() {
		n1, _ := tw.EncodeCDR(buf)
		n2, _ := po.EncodeCDR(buf)
		n3, _ := tm.EncodeCDR(buf)
		n4, _ := tw.Linear.EncodeCDR(buf)
		n5, _ := po.Orientation.EncodeCDR(buf)
		n6, _ := po.Position.EncodeCDR(buf)
		var d Twist
		_ = d.DecodeCDR(buf[:TwistSize])
		sink += n1 + n2 + n3 + n4 + n5 + n6
	})
	if allocs != 0 {
		t.Errorf("fixed-size encode/decode: %v allocs/op, want 0", allocs)
	}
	_ = sink
}

// FuzzDecode: any payload decodes to a value or an error naming the field
// and offset, never a panic; what decodes re-encodes to a payload that
// decodes to the same value.
func FuzzDecode(f *testing.F) {
	r := shipped(f)
	codecs := make([]*Codec, len(wantShipped))
	for i, n := range wantShipped {
		codecs[i] = codec(f, r, n)
		b, _ := codecs[i].Append(nil, Msg{})
		f.Add(uint8(i), b)
	}
	imu, _ := codec(f, r, "sensor_msgs/Imu").Append(nil, Msg{"header": Msg{"frame_id": "imu_link"}})
	f.Add(uint8(13), imu)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		m, err := c.Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(b) {
				t.Fatalf("error %v is not a DecodeError with an offset in the payload", err)
			}
			return
		}
		again, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := c.Decode(again)
		if err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		j1, _ := c.ToJSON(m)
		j2, _ := c.ToJSON(m2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed the value:\n%s\n%s", j1, j2)
		}
	})
}

// TestJSONForms: int64 past 2^53 survives as a string, numbers are taken
// too, non-finite floats have names, unknown fields and out-of-range
// values are refused with the field named.
func TestJSONForms(t *testing.T) {
	r := shipped(t)
	if err := r.AddText("p/K", "int64 i\nuint64 u\nfloat32 f\nuint8[] b\nint8 s\n"); err != nil {
		t.Fatal(err)
	}
	c := codec(t, r, "p/K")
	m, err := c.FromJSON([]byte(`{"i":"-9007199254740993","u":18446744073709551615,"f":"NaN","b":[1,255],"s":-128}`))
	if err != nil {
		t.Fatal(err)
	}
	if m["i"] != int64(-9007199254740993) || m["u"] != uint64(math.MaxUint64) || !math.IsNaN(float64(m["f"].(float32))) ||
		!bytes.Equal(m["b"].([]uint8), []byte{1, 255}) || m["s"] != int8(-128) {
		t.Errorf("FromJSON = %#v", m)
	}
	j, err := c.ToJSON(m)
	if want := `{"i":"-9007199254740993","u":"18446744073709551615","f":"NaN","b":[1,255],"s":-128}`; err != nil || string(j) != want {
		t.Errorf("ToJSON = %s (%v)\nwant     %s", j, err, want)
	}
	for in, want := range map[string]string{
		`{"x":1}`:     `unknown field "x"`,
		`{"s":128}`:   "field s: 128 out of range for int8",
		`{"b":[256]}`: "field b: [0]: 256 out of range for uint8",
		`{"i":1.5}`:   "field i:",
	} {
		if _, err := c.FromJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromJSON(%s) = %v, want %q", in, err, want)
		}
	}
}
