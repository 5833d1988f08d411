package rosmsg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// Msg is a message as a Go value: field name → value. The value forms, by
// kind: bool; byte, char, uint8 → uint8; int8 … uint64 → the Go type of
// that name; float32, float64; string; a nested message → Msg. Arrays and
// sequences are slices of those ([]float64, []uint8, []string, []Msg).
// Encoding also takes map[string]any, []any and []map[string]any; a field
// left out is encoded as its default (or zero).
type Msg map[string]any

// Header is the XCDR1 encapsulation header ROS 2 writes: CDR, little endian.
var Header = [4]byte{0x00, 0x01, 0x00, 0x00}

// ErrShortBuffer is returned when a caller-owned buffer cannot hold the
// encoding.
var ErrShortBuffer = errors.New("rosmsg: buffer too short")

// Codec encodes and decodes one message type. Built by Registry.Codec;
// safe for concurrent use (it is read-only).
type Codec struct {
	def    *Definition
	fields []cfield
	// fixed is the encoded body size (after the 4-byte header) when every
	// field is fixed-size; -1 otherwise.
	fixed int
}

type cfield struct {
	Field
	sub *Codec // Kind == Message
}

// Codec resolves fullName and every type it uses and returns its codec.
func (r *Registry) Codec(fullName string) (*Codec, error) {
	if _, err := r.Dependencies(fullName); err != nil {
		return nil, err
	}
	return r.build(normalizeName(fullName), map[string]*Codec{}), nil
}

// build assumes Dependencies has checked the types exist and do not nest
// themselves.
func (r *Registry) build(name string, memo map[string]*Codec) *Codec {
	if c, ok := memo[name]; ok {
		return c
	}
	d := r.defs[name]
	c := &Codec{def: d, fields: make([]cfield, len(d.Fields))}
	for i, f := range d.Fields {
		c.fields[i].Field = f
		if f.Type.Kind == Message {
			c.fields[i].sub = r.build(f.Type.Msg, memo)
		}
	}
	// Fixed size: body size from offset 0 (the top level starts there).
	c.fixed = -1
	if n, ok := c.sizeFrom(0); ok {
		c.fixed = n
	}
	memo[name] = c
	return c
}

// sizeFrom is the encoded size of c starting at body offset off when it
// holds no string or sequence.
func (c *Codec) sizeFrom(off int) (int, bool) {
	start := off
	if len(c.fields) == 0 {
		return 1, true
	}
	for _, f := range c.fields {
		n := 1
		switch f.Type.Array {
		case Fixed:
			n = f.Type.Len
		case Bounded, Unbounded:
			return 0, false
		}
		for range n {
			switch f.Type.Kind {
			case String:
				return 0, false
			case Message:
				s, ok := f.sub.sizeFrom(off)
				if !ok {
					return 0, false
				}
				off += s
			default:
				sz := f.Type.Kind.size()
				off = align(off, sz) + sz
			}
		}
	}
	return off - start, true
}

// Definition is the codec's message definition.
func (c *Codec) Definition() *Definition { return c.def }

// Name is the message's full name ("sensor_msgs/Imu").
func (c *Codec) Name() string { return c.def.FullName() }

// FixedSize is the encoded size including the header when the message has
// no string or sequence anywhere, and whether it has none.
func (c *Codec) FixedSize() (int, bool) { return c.fixed + 4, c.fixed >= 0 }

func align(off, a int) int {
	if a <= 1 {
		return off
	}
	return (off + a - 1) &^ (a - 1)
}

// Append appends m's encoding (header included) to dst. Errors name the
// field and say what was wrong with its value.
func (c *Codec) Append(dst []byte, m map[string]any) ([]byte, error) {
	e := encoder{b: append(dst, Header[:]...)}
	e.base = len(e.b)
	if err := e.msg(c, m); err != nil {
		return dst, fmt.Errorf("rosmsg: encode %s: %w", c.Name(), err)
	}
	return e.b, nil
}

type encoder struct {
	b    []byte
	base int // index of the byte after the header: alignment is relative to it
}

func (e *encoder) pad(a int) {
	for (len(e.b)-e.base)%a != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) u32(v uint32) {
	e.pad(4)
	e.b = binary.LittleEndian.AppendUint32(e.b, v)
}

func (e *encoder) msg(c *Codec, m map[string]any) error {
	if len(c.fields) == 0 {
		// rosidl gives an empty message one uint8 member
		// (structure_needs_at_least_one_member).
		e.b = append(e.b, 0)
		return nil
	}
	for _, f := range c.fields {
		v, ok := m[f.Name]
		if !ok || v == nil {
			v = f.DefaultValue
		}
		if err := e.field(f, v); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

func (e *encoder) field(f cfield, v any) error {
	t := f.Type
	if t.Array == NotArray {
		return e.one(f, v)
	}
	n, err := sliceLen(v)
	if err != nil {
		return err
	}
	switch t.Array {
	case Fixed:
		if v != nil && n != t.Len {
			return fmt.Errorf("%d elements, want %d", n, t.Len)
		}
	case Bounded:
		if n > t.Len {
			return fmt.Errorf("%d elements, bound is %d", n, t.Len)
		}
		e.u32(uint32(n))
	case Unbounded:
		if n > math.MaxUint32 {
			return fmt.Errorf("%d elements do not fit a uint32 count", n)
		}
		e.u32(uint32(n))
	}
	if t.Array == Fixed && v == nil {
		// Left out: Len zero (or default) elements.
		for i := 0; i < t.Len; i++ {
			if err := e.one(f, nil); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
	if t.Kind == Uint8 || t.Kind == Byte || t.Kind == Char {
		if b, ok := v.([]uint8); ok {
			e.b = append(e.b, b...)
			return nil
		}
	}
	for i := range n {
		if err := e.one(f, sliceIndex(v, i)); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// one encodes a single element; nil is the zero value.
func (e *encoder) one(f cfield, v any) error {
	k := f.Type.Kind
	if k == Message {
		switch m := v.(type) {
		case nil:
			return e.msg(f.sub, nil)
		case Msg:
			return e.msg(f.sub, m)
		case map[string]any:
			return e.msg(f.sub, m)
		}
		return fmt.Errorf("%T is not a message (want rosmsg.Msg)", v)
	}
	if k == String {
		s, ok := v.(string)
		if !ok && v != nil {
			return fmt.Errorf("%T is not a string", v)
		}
		if f.Type.StringBound > 0 && len(s) > f.Type.StringBound {
			return fmt.Errorf("%d bytes, bound is %d", len(s), f.Type.StringBound)
		}
		if len(s) >= math.MaxUint32 {
			return fmt.Errorf("%d bytes do not fit a uint32 length", len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return fmt.Errorf("NUL at byte %d (CDR strings end at the first NUL)", i)
			}
		}
		e.u32(uint32(len(s) + 1))
		e.b = append(append(e.b, s...), 0)
		return nil
	}
	e.pad(k.size())
	le := binary.LittleEndian
	var ok bool
	switch k {
	case Bool:
		ok = put(v, func(x bool) {
			e.b = append(e.b, 0)
			if x {
				e.b[len(e.b)-1] = 1
			}
		})
	case Byte, Char, Uint8:
		ok = put(v, func(x uint8) { e.b = append(e.b, x) })
	case Int8:
		ok = put(v, func(x int8) { e.b = append(e.b, byte(x)) })
	case Int16:
		ok = put(v, func(x int16) { e.b = le.AppendUint16(e.b, uint16(x)) })
	case Uint16:
		ok = put(v, func(x uint16) { e.b = le.AppendUint16(e.b, x) })
	case Int32:
		ok = put(v, func(x int32) { e.b = le.AppendUint32(e.b, uint32(x)) })
	case Uint32:
		ok = put(v, func(x uint32) { e.b = le.AppendUint32(e.b, x) })
	case Int64:
		ok = put(v, func(x int64) { e.b = le.AppendUint64(e.b, uint64(x)) })
	case Uint64:
		ok = put(v, func(x uint64) { e.b = le.AppendUint64(e.b, x) })
	case Float32:
		ok = put(v, func(x float32) { e.b = le.AppendUint32(e.b, math.Float32bits(x)) })
	case Float64:
		ok = put(v, func(x float64) { e.b = le.AppendUint64(e.b, math.Float64bits(x)) })
	}
	if !ok {
		return fmt.Errorf("%T is not a %s", v, k)
	}
	return nil
}

// put calls w with v (nil: the zero T) when v is a T.
func put[T any](v any, w func(T)) bool {
	x, ok := orZero[T](v)
	if ok {
		w(x)
	}
	return ok
}

func orZero[T any](v any) (T, bool) {
	if v == nil {
		var z T
		return z, true
	}
	x, ok := v.(T)
	return x, ok
}

// sliceLen is the length of one of the slice value forms (nil: 0).
func sliceLen(v any) (int, error) {
	if v == nil {
		return 0, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return rv.Len(), nil
	}
	return 0, fmt.Errorf("%T is not a slice", v)
}

// sliceIndex is element i of a slice sliceLen accepted.
func sliceIndex(v any, i int) any { return reflect.ValueOf(v).Index(i).Interface() }

// sliceOf converts elements already in the Go form of k into the typed
// slice for k.
func sliceOf(k Kind, vals []any) any {
	switch k {
	case Bool:
		return typed[bool](vals)
	case Byte, Char, Uint8:
		return typed[uint8](vals)
	case Int8:
		return typed[int8](vals)
	case Int16:
		return typed[int16](vals)
	case Uint16:
		return typed[uint16](vals)
	case Int32:
		return typed[int32](vals)
	case Uint32:
		return typed[uint32](vals)
	case Int64:
		return typed[int64](vals)
	case Uint64:
		return typed[uint64](vals)
	case Float32:
		return typed[float32](vals)
	case Float64:
		return typed[float64](vals)
	case String:
		return typed[string](vals)
	case Message:
		return typed[Msg](vals)
	}
	return vals
}

func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i], _ = v.(T)
	}
	return out
}
