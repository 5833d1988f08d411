package rosmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// JSON forms, for people and for tools in other languages: fields in
// definition order; int64 and uint64 as decimal strings (JSON numbers lose
// precision past 2^53); uint8[] as an array of numbers; non-finite floats
// as the strings "NaN", "Infinity", "-Infinity".

// ToJSON writes m as JSON (see the JSON forms above). Fields m lacks are
// written as their defaults.
func (c *Codec) ToJSON(m map[string]any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeMsgJSON(&b, c, m); err != nil {
		return nil, fmt.Errorf("rosmsg: %s to JSON: %w", c.Name(), err)
	}
	return b.Bytes(), nil
}

func writeMsgJSON(b *bytes.Buffer, c *Codec, m map[string]any) error {
	b.WriteByte('{')
	for i, f := range c.fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		b.Write(k)
		b.WriteByte(':')
		v, ok := m[f.Name]
		if !ok || v == nil {
			v = f.DefaultValue
		}
		if err := writeFieldJSON(b, f, v); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	b.WriteByte('}')
	return nil
}

func writeFieldJSON(b *bytes.Buffer, f cfield, v any) error {
	if f.Type.Array == NotArray {
		return writeOneJSON(b, f, v)
	}
	n, err := sliceLen(v)
	if err != nil {
		return err
	}
	if v == nil && f.Type.Array == Fixed {
		n = f.Type.Len
	}
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		var el any
		if v != nil {
			el = sliceIndex(v, i)
		}
		if err := writeOneJSON(b, f, el); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	b.WriteByte(']')
	return nil
}

func writeOneJSON(b *bytes.Buffer, f cfield, v any) error {
	k := f.Type.Kind
	if k == Message {
		switch m := v.(type) {
		case nil:
			return writeMsgJSON(b, f.sub, nil)
		case Msg:
			return writeMsgJSON(b, f.sub, m)
		case map[string]any:
			return writeMsgJSON(b, f.sub, m)
		}
		return fmt.Errorf("%T is not a message", v)
	}
	var ok bool
	switch k {
	case String:
		var s string
		if s, ok = orZero[string](v); ok {
			q, _ := json.Marshal(s)
			b.Write(q)
		}
	case Bool:
		var x bool
		if x, ok = orZero[bool](v); ok {
			b.WriteString(strconv.FormatBool(x))
		}
	case Float32:
		var x float32
		if x, ok = orZero[float32](v); ok {
			writeFloatJSON(b, float64(x), 32)
		}
	case Float64:
		var x float64
		if x, ok = orZero[float64](v); ok {
			writeFloatJSON(b, x, 64)
		}
	case Int64:
		var x int64
		if x, ok = orZero[int64](v); ok {
			b.WriteString(`"` + strconv.FormatInt(x, 10) + `"`)
		}
	case Uint64:
		var x uint64
		if x, ok = orZero[uint64](v); ok {
			b.WriteString(`"` + strconv.FormatUint(x, 10) + `"`)
		}
	default:
		var i int64
		i, ok = smallInt(k, v)
		b.WriteString(strconv.FormatInt(i, 10))
	}
	if !ok {
		return fmt.Errorf("%T is not a %s", v, k)
	}
	return nil
}

func smallInt(k Kind, v any) (int64, bool) {
	if v == nil {
		return 0, true
	}
	switch x := v.(type) {
	case uint8:
		return int64(x), k == Uint8 || k == Byte || k == Char
	case int8:
		return int64(x), k == Int8
	case int16:
		return int64(x), k == Int16
	case uint16:
		return int64(x), k == Uint16
	case int32:
		return int64(x), k == Int32
	case uint32:
		return int64(x), k == Uint32
	}
	return 0, false
}

func writeFloatJSON(b *bytes.Buffer, x float64, bits int) {
	switch {
	case math.IsNaN(x):
		b.WriteString(`"NaN"`)
	case math.IsInf(x, 1):
		b.WriteString(`"Infinity"`)
	case math.IsInf(x, -1):
		b.WriteString(`"-Infinity"`)
	default:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, bits))
	}
}

// FromJSON reads a message from JSON (the forms above; int64 and uint64
// also as numbers, floats also as numbers written exactly). Fields left
// out take their defaults; unknown fields are an error.
func (c *Codec) FromJSON(data []byte) (Msg, error) {
	return c.fromJSON(data, false)
}

// fromJSON with strict set also refuses a missing field.
func (c *Codec) fromJSON(data []byte, strict bool) (Msg, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("rosmsg: %s from JSON: %w", c.Name(), err)
	}
	m, err := msgFromJSON(c, raw, strict)
	if err != nil {
		return nil, fmt.Errorf("rosmsg: %s from JSON: %w", c.Name(), err)
	}
	return m, nil
}

func msgFromJSON(c *Codec, raw any, strict bool) (Msg, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", raw)
	}
	m := make(Msg, len(c.fields))
	for _, f := range c.fields {
		rv, ok := obj[f.Name]
		if !ok {
			if strict {
				return nil, fmt.Errorf("field %s missing", f.Name)
			}
			continue
		}
		v, err := fieldFromJSON(f, rv, strict)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		m[f.Name] = v
	}
	for k := range obj {
		if _, ok := m[k]; !ok {
			if !hasField(c, k) {
				return nil, fmt.Errorf("unknown field %q", k)
			}
		}
	}
	return m, nil
}

func hasField(c *Codec, name string) bool {
	for _, f := range c.fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

func fieldFromJSON(f cfield, raw any, strict bool) (any, error) {
	if f.Type.Array == NotArray {
		return oneFromJSON(f, raw, strict)
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%T is not an array", raw)
	}
	vals := make([]any, len(arr))
	for i, r := range arr {
		v, err := oneFromJSON(f, r, strict)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		vals[i] = v
	}
	return sliceOf(f.Type.Kind, vals), nil
}

func oneFromJSON(f cfield, raw any, strict bool) (any, error) {
	k := f.Type.Kind
	switch k {
	case Message:
		return msgFromJSON(f.sub, raw, strict)
	case String:
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("%T is not a string", raw)
		}
		return s, nil
	case Bool:
		x, ok := raw.(bool)
		if !ok {
			return nil, fmt.Errorf("%T is not a bool", raw)
		}
		return x, nil
	}
	var text string
	switch r := raw.(type) {
	case json.Number:
		text = r.String()
	case string:
		text = r
	default:
		return nil, fmt.Errorf("%T is not a %s", raw, k)
	}
	if k == Float32 || k == Float64 {
		switch text {
		case "NaN":
			text = "nan"
		case "Infinity":
			text = "inf"
		case "-Infinity":
			text = "-inf"
		}
	}
	return parseScalar(f.Type, text)
}
