package rosmsg

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The Foxglove cross-check (issue 33, 4(b)): Foxglove's ROS 2 serializer
// (npm @foxglove/rosmsg 5.0.5, @foxglove/rosmsg2-serialization 3.1.0,
// pinned in testdata/foxglove/package-lock.json, installed by .ci/test
// with npm ci) is an implementation nobody here wrote. Over random values
// of every shipped type: Foxglove decodes hilrig's encoding to the value,
// hilrig decodes Foxglove's encoding to the value, and the two encodings
// are byte-identical.
func TestFoxgloveCrossCheck(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Foxglove cross-check needs Node 20 (.ci/test)")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "foxglove"))
	for _, m := range []string{"@foxglove/rosmsg", "@foxglove/rosmsg2-serialization"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err != nil {
			t.Skipf("%s is not installed in %s: run `npm ci --no-audit --no-fund` there (.ci/test does)", m, dir)
		}
	}
	r := shipped(t)
	rng := rand.New(rand.NewPCG(33, 4))
	type tcase struct {
		Type       string `json:"type"`
		Definition string `json:"definition"`
		Hex        string `json:"hex"`
		JSON       string `json:"json"`
	}
	var cases []tcase
	var codecs []*Codec
	const perType = 40
	// Beyond the shipped types, one of the user's that has every kind and
	// array form the shipped ones lack (int64/uint64, char, bounded
	// strings and sequences, fixed arrays of strings and messages).
	for _, td := range []struct{ name, text string }{
		{"hilrig_test/Inner", "int8 a\nstring s\nuint16 b\n"},
		{"hilrig_test/AllKinds", `bool b
byte y
char c
int8 i8
uint8 u8
int16 i16
uint16 u16
int32 i32
uint32 u32
int64 i64
uint64 u64
float32 f32
float64 f64
string s
string<=10 sb
int64[3] i64s
uint64[] u64s
float32[<=4] f32s
string[2] ss
string<=5[<=3] sbs
bool[] bs
int16[] i16s
Inner in
Inner[2] ins
Inner[] inu
Inner[<=2] inb
builtin_interfaces/Time[] times
uint8 CONST=7
`},
	} {
		if err := r.AddText(td.name, td.text); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(slices.Clone(wantShipped), "hilrig_test/AllKinds") {
		c := codec(t, r, name)
		text, err := r.FullText(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range perType {
			// The first value of each type is all empty (size 0 of every
			// string and sequence), one in eight is long.
			m := randMsg(rng, c, i)
			b, err := c.Append(nil, m)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			js, err := c.ToJSON(m)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, tcase{name, text, hex.EncodeToString(b), string(js)})
			codecs = append(codecs, c)
		}
	}
	in, _ := json.Marshal(map[string]any{"cases": cases})
	cmd := exec.Command(node, filepath.Join(dir, "check.js"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check.js: %v\n%s", err, stderr.String())
	}
	var res struct {
		Results []struct {
			Decoded json.RawMessage `json:"decoded"`
			Encoded string          `json:"encoded"`
			Error   string          `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v", err)
	}
	if len(res.Results) != len(cases) {
		t.Fatalf("node answered %d cases of %d", len(res.Results), len(cases))
	}
	fails := 0
	for i, got := range res.Results {
		tc, c := cases[i], codecs[i]
		if got.Error != "" {
			t.Errorf("%s #%d: foxglove: %s", tc.Type, i%perType, got.Error)
			fails++
			continue
		}
		// Foxglove decoded hilrig's bytes to the value: read its JSON
		// strictly (every field present) into the Go forms, compare in
		// the one canonical JSON.
		fm, err := c.fromJSON(got.Decoded, true)
		if err != nil {
			t.Errorf("%s #%d: foxglove's decoding: %v\n%s", tc.Type, i%perType, err, got.Decoded)
			fails++
			continue
		}
		if fj, _ := c.ToJSON(fm); string(fj) != tc.JSON {
			t.Errorf("%s #%d: foxglove decoded hilrig's bytes to\n%s\nwant\n%s", tc.Type, i%perType, fj, tc.JSON)
			fails++
		}
		// Foxglove's encoding of the value is byte for byte hilrig's, and
		// hilrig decodes it to the value.
		if got.Encoded != tc.Hex {
			t.Errorf("%s #%d: encodings differ\nfoxglove %s\nhilrig   %s", tc.Type, i%perType, got.Encoded, tc.Hex)
			fails++
		}
		fb, _ := hex.DecodeString(got.Encoded)
		hm, err := c.Decode(fb)
		if err != nil {
			t.Errorf("%s #%d: decoding foxglove's bytes: %v", tc.Type, i%perType, err)
			fails++
			continue
		}
		if hj, _ := c.ToJSON(hm); string(hj) != tc.JSON {
			t.Errorf("%s #%d: hilrig decoded foxglove's bytes to\n%s\nwant\n%s", tc.Type, i%perType, hj, tc.JSON)
			fails++
		}
		if fails > 10 {
			t.Fatal("too many failures")
		}
	}
	t.Logf("%d values over %d types checked against Foxglove", len(cases), len(wantShipped)+1)
}

// randMsg is a random value of c: finite floats (no NaN, no -0: JSON
// cannot carry them the same way on both sides), printable ASCII strings
// (Foxglove sizes strings in UTF-16 units), sequences of 0 to a few
// hundred elements. i == 0 gives every string and sequence empty; i%8 == 7
// long ones.
func randMsg(rng *rand.Rand, c *Codec, i int) Msg {
	m := Msg{}
	for _, f := range c.fields {
		n := 1
		switch f.Type.Array {
		case Fixed:
			n = f.Type.Len
		case Bounded, Unbounded:
			n = randLen(rng, i)
			if f.Type.Array == Bounded {
				n = min(n, f.Type.Len)
			}
		}
		vals := make([]any, n)
		for j := range vals {
			vals[j] = randOne(rng, f, i)
		}
		if f.Type.Array == NotArray {
			m[f.Name] = vals[0]
		} else {
			m[f.Name] = sliceOf(f.Type.Kind, vals)
		}
	}
	return m
}

func randLen(rng *rand.Rand, i int) int {
	switch {
	case i == 0:
		return 0
	case i%8 == 7:
		return 200 + rng.IntN(800)
	}
	return rng.IntN(6)
}

func randOne(rng *rand.Rand, f cfield, i int) any {
	switch f.Type.Kind {
	case Message:
		return randMsg(rng, f.sub, i)
	case String:
		n := randLen(rng, i)
		if f.Type.StringBound > 0 {
			n = min(n, f.Type.StringBound)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(' ' + rng.IntN(95))
		}
		return string(b)
	case Bool:
		return rng.IntN(2) == 1
	case Byte, Char, Uint8:
		return uint8(rng.Uint32())
	case Int8:
		return int8(rng.Uint32())
	case Int16:
		return int16(rng.Uint32())
	case Uint16:
		return uint16(rng.Uint32())
	case Int32:
		return int32(rng.Uint32())
	case Uint32:
		return rng.Uint32()
	case Int64:
		return int64(rng.Uint64())
	case Uint64:
		return rng.Uint64()
	case Float32:
		for {
			x := math.Float32frombits(rng.Uint32())
			if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) && x != 0 || rng.IntN(4) == 0 && x == 0 && !math.Signbit(float64(x)) {
				return x
			}
		}
	case Float64:
		for {
			x := math.Float64frombits(rng.Uint64())
			if !math.IsNaN(x) && !math.IsInf(x, 0) && x != 0 {
				return x
			}
		}
	}
	return nil
}
