package rosmsg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// DecodeError is a malformed payload: which field, at which byte offset
// of the payload (header included), and what was wrong.
type DecodeError struct {
	Type   string // the top-level message type
	Field  string // dotted path ("header.frame_id", "fields[2].name"); "" for the header
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	f := e.Field
	if f == "" {
		f = "(encapsulation header)"
	}
	return fmt.Sprintf("rosmsg: decode %s: field %s at offset %d: %s", e.Type, f, e.Offset, e.Reason)
}

// maxTrailing is the padding a writer may leave after the last field: RTPS
// serialized payloads are padded to a multiple of 4.
const maxTrailing = 3

// Decode decodes one payload (header included) into a Msg. Every length
// and count is checked against the bytes left before it is used; errors
// are *DecodeError. The result does not alias b.
func (c *Codec) Decode(b []byte) (Msg, error) {
	d := decoder{b: b, base: 4, typ: c.Name()}
	if len(b) < 4 {
		return nil, d.fail("", fmt.Sprintf("payload of %d bytes has no 4-byte encapsulation header", len(b)))
	}
	if b[0] != Header[0] || b[1] != Header[1] {
		return nil, d.fail("", fmt.Sprintf("encapsulation %02x %02x, want 00 01 (XCDR1, little endian)", b[0], b[1]))
	}
	d.off = 4
	m, err := d.msg(c, "")
	if err != nil {
		return nil, err
	}
	if rest := len(b) - d.off; rest > maxTrailing {
		return nil, d.fail("", fmt.Sprintf("%d bytes after the message end at %d", rest, d.off))
	}
	return m, nil
}

type decoder struct {
	b    []byte
	off  int
	base int
	typ  string
}

func (d *decoder) fail(field, reason string) error {
	return &DecodeError{Type: d.typ, Field: field, Offset: d.off, Reason: reason}
}

// take aligns to a and returns the next n bytes.
func (d *decoder) take(a, n int, field string) ([]byte, error) {
	off := d.base + align(d.off-d.base, a)
	if off > len(d.b) || n > len(d.b)-off {
		return nil, d.fail(field, fmt.Sprintf("needs %d bytes, %d left", n, max(0, len(d.b)-off)))
	}
	d.off = off + n
	return d.b[off:d.off], nil
}

func (d *decoder) u32(field string) (uint32, error) {
	p, err := d.take(4, 4, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (d *decoder) msg(c *Codec, path string) (Msg, error) {
	if len(c.fields) == 0 {
		_, err := d.take(1, 1, join(path, "structure_needs_at_least_one_member"))
		return Msg{}, err
	}
	m := make(Msg, len(c.fields))
	for _, f := range c.fields {
		v, err := d.field(f, join(path, f.Name))
		if err != nil {
			return nil, err
		}
		m[f.Name] = v
	}
	return m, nil
}

// minSize is the fewest bytes one element of f can take, so that a count
// read from the wire can be checked against the bytes left.
func minSize(f cfield) int {
	switch f.Type.Kind {
	case String:
		return 4
	case Message:
		// Every message takes at least one byte; its padded size depends
		// on where it starts, so no more is assumed.
		return 1
	}
	return f.Type.Kind.size()
}

func (d *decoder) field(f cfield, path string) (any, error) {
	t := f.Type
	if t.Array == NotArray {
		return d.one(f, path)
	}
	n := t.Len
	if t.Array != Fixed {
		c, err := d.u32(path)
		if err != nil {
			return nil, err
		}
		if t.Array == Bounded && int64(c) > int64(t.Len) {
			return nil, d.fail(path, fmt.Sprintf("count %d exceeds the bound %d", c, t.Len))
		}
		if int64(c) > int64(len(d.b)-d.off)/int64(minSize(f)) {
			return nil, d.fail(path, fmt.Sprintf("count %d cannot fit the %d bytes left", c, len(d.b)-d.off))
		}
		n = int(c)
	}
	if k := t.Kind; k == Uint8 || k == Byte || k == Char {
		p, err := d.take(1, n, path)
		if err != nil {
			return nil, err
		}
		return append([]uint8{}, p...), nil
	}
	vals := make([]any, n)
	for i := range n {
		v, err := d.one(f, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return sliceOf(t.Kind, vals), nil
}

func (d *decoder) one(f cfield, path string) (any, error) {
	k := f.Type.Kind
	switch k {
	case Message:
		return d.msg(f.sub, path)
	case String:
		start := d.off
		n, err := d.u32(path)
		if err != nil {
			return nil, err
		}
		if int64(n) > int64(len(d.b)-d.off) {
			d.off = start
			return nil, d.fail(path, fmt.Sprintf("string length %d exceeds the %d bytes left", n, len(d.b)-d.off-4))
		}
		if n == 0 {
			return "", nil // some writers send an empty string without its NUL
		}
		p, _ := d.take(1, int(n), path)
		if p[n-1] != 0 {
			return nil, d.fail(path, fmt.Sprintf("string of length %d does not end in NUL", n))
		}
		if i := bytes.IndexByte(p[:n-1], 0); i >= 0 {
			// C and C++ readers would see a shorter string, and the
			// encoder refuses it: one value, one encoding.
			return nil, d.fail(path, fmt.Sprintf("NUL at byte %d inside a string of length %d", i, n))
		}
		s := string(p[:n-1])
		if f.Type.StringBound > 0 && len(s) > f.Type.StringBound {
			return nil, d.fail(path, fmt.Sprintf("string of %d bytes exceeds the bound %d", len(s), f.Type.StringBound))
		}
		return s, nil
	}
	sz := k.size()
	p, err := d.take(sz, sz, path)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch k {
	case Bool:
		if p[0] > 1 {
			return nil, d.fail(path, fmt.Sprintf("bool byte %d is neither 0 nor 1", p[0]))
		}
		return p[0] == 1, nil
	case Byte, Char, Uint8:
		return p[0], nil
	case Int8:
		return int8(p[0]), nil
	case Int16:
		return int16(le.Uint16(p)), nil
	case Uint16:
		return le.Uint16(p), nil
	case Int32:
		return int32(le.Uint32(p)), nil
	case Uint32:
		return le.Uint32(p), nil
	case Int64:
		return int64(le.Uint64(p)), nil
	case Uint64:
		return le.Uint64(p), nil
	case Float32:
		return math.Float32frombits(le.Uint32(p)), nil
	case Float64:
		return math.Float64frombits(le.Uint64(p)), nil
	}
	return nil, d.fail(path, fmt.Sprintf("kind %s", k))
}
