package rosmsg

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse parses the .msg text of the message pkg/name. Nested types are
// named but not resolved (Registry does that): a bare `Name` means the
// same package, a bare `Header` means std_msgs/Header (as rosidl does).
// Errors name the message and line.
func Parse(pkg, name, text string) (*Definition, error) {
	if !validPkg(pkg) || !validTypeName(name) {
		return nil, fmt.Errorf("rosmsg: bad message name %q/%q", pkg, name)
	}
	d := &Definition{Package: pkg, Name: name, Text: text}
	seen := map[string]bool{}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(stripComment(raw))
		if line == "" {
			continue
		}
		if err := d.parseLine(line, seen); err != nil {
			return nil, fmt.Errorf("rosmsg: %s line %d: %w", d.FullName(), i+1, err)
		}
	}
	return d, nil
}

func (d *Definition) parseLine(line string, seen map[string]bool) error {
	i := strings.IndexAny(line, " \t")
	if i < 0 || strings.TrimSpace(line[i+1:]) == "" {
		return fmt.Errorf("%q: want `type name [default]` or `type NAME=value`", line)
	}
	typ, rest := line[:i], strings.TrimSpace(line[i+1:])
	if rest == "" {
		return fmt.Errorf("%q: want `type name [default]` or `type NAME=value`", line)
	}
	t, err := d.parseType(typ)
	if err != nil {
		return err
	}
	name, after := rest, ""
	if i := strings.IndexAny(rest, " \t="); i >= 0 {
		name, after = rest[:i], strings.TrimSpace(rest[i:])
	}
	if seen[name] {
		return fmt.Errorf("%q defined twice", name)
	}
	seen[name] = true
	if strings.HasPrefix(after, "=") {
		// A constant: a primitive or string, never an array.
		if t.Kind == Message || t.Array != NotArray {
			return fmt.Errorf("constant %s: type %s cannot be a constant", name, t)
		}
		if !validConstName(name) {
			return fmt.Errorf("constant %q: want upper case, digits and underscores", name)
		}
		text := strings.TrimSpace(after[1:])
		v, err := parseScalar(t, text)
		if err != nil {
			return fmt.Errorf("constant %s: %w", name, err)
		}
		d.Constants = append(d.Constants, Constant{Name: name, Type: t.Kind, Text: text, Value: v})
		return nil
	}
	if !validFieldName(name) {
		return fmt.Errorf("field %q: want lower case, digits and underscores, starting with a letter", name)
	}
	f := Field{Name: name, Type: t, Default: after}
	if after != "" {
		if t.Kind == Message {
			return fmt.Errorf("field %s: a nested message cannot have a default", name)
		}
		if f.DefaultValue, err = parseDefault(t, after); err != nil {
			return fmt.Errorf("field %s default %q: %w", name, after, err)
		}
	}
	d.Fields = append(d.Fields, f)
	return nil
}

// parseType parses "float64[9]", "string<=8[<=3]", "geometry_msgs/Vector3[]".
func (d *Definition) parseType(s string) (Type, error) {
	var t Type
	base := s
	if i := strings.IndexByte(s, '['); i >= 0 {
		if !strings.HasSuffix(s, "]") {
			return t, fmt.Errorf("type %q: unterminated array", s)
		}
		base = s[:i]
		in := s[i+1 : len(s)-1]
		switch {
		case in == "":
			t.Array = Unbounded
		case strings.HasPrefix(in, "<="):
			t.Array = Bounded
			in = in[2:]
		default:
			t.Array = Fixed
		}
		if t.Array != Unbounded {
			n, err := strconv.Atoi(in)
			if err != nil || n <= 0 {
				return t, fmt.Errorf("type %q: array size must be a positive integer", s)
			}
			t.Len = n
		}
	}
	if b, n, ok := strings.Cut(base, "<="); ok {
		if b != "string" {
			return t, fmt.Errorf("type %q: only strings have a bound", s)
		}
		v, err := strconv.Atoi(n)
		if err != nil || v <= 0 {
			return t, fmt.Errorf("type %q: string bound must be a positive integer", s)
		}
		base, t.StringBound = b, v
	}
	if base == "wstring" {
		return t, fmt.Errorf("type %q: wstring is not supported (its wire form differs between RMW implementations)", s)
	}
	if k, ok := kindFromName(base); ok {
		t.Kind = k
		return t, nil
	}
	t.Kind = Message
	pkg, name, ok := strings.Cut(base, "/")
	switch {
	case !ok && base == "Header":
		pkg, name = "std_msgs", "Header"
	case !ok:
		pkg, name = d.Package, base
	}
	pkg = strings.TrimSuffix(pkg, "/msg") // "pkg/msg/Name" is accepted too
	if p, n, ok := strings.Cut(name, "/"); ok && p == "msg" {
		name = n
	}
	if !validPkg(pkg) || !validTypeName(name) {
		return t, fmt.Errorf("type %q: not a primitive and not a message name", s)
	}
	t.Msg = pkg + "/" + name
	return t, nil
}

// parseDefault parses a field's default: a scalar, or `[a, b]` for arrays.
func parseDefault(t Type, s string) (any, error) {
	if t.Array == NotArray {
		return parseScalar(t, s)
	}
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("an array default is [a, b, ...]")
	}
	items, err := splitList(s[1 : len(s)-1])
	if err != nil {
		return nil, err
	}
	switch {
	case t.Array == Fixed && len(items) != t.Len:
		return nil, fmt.Errorf("%d values for %d elements", len(items), t.Len)
	case t.Array == Bounded && len(items) > t.Len:
		return nil, fmt.Errorf("%d values for at most %d elements", len(items), t.Len)
	}
	el := t
	el.Array, el.Len = NotArray, 0
	vals := make([]any, len(items))
	for i, it := range items {
		if vals[i], err = parseScalar(el, it); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return sliceOf(t.Kind, vals), nil
}

// splitList splits "1, 2, 'a,b'" on commas outside quotes.
func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for {
		i, open := indexUnquoted(s, ',')
		if i < 0 {
			if open {
				return nil, fmt.Errorf("unterminated quote")
			}
			return append(out, strings.TrimSpace(s)), nil
		}
		out = append(out, strings.TrimSpace(s[:i]))
		s = s[i+1:]
	}
}

// indexUnquoted is the index of the first stop outside '…' and "…" (with
// backslash escapes), or -1; open says a quote was left unterminated.
func indexUnquoted(s string, stop byte) (i int, open bool) {
	var q byte
	for i = 0; i < len(s); i++ {
		switch c := s[i]; {
		case q != 0 && c == '\\':
			i++
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == 0 && c == stop:
			return i, false
		}
	}
	return -1, q != 0
}

// parseScalar parses one primitive or string value into its Go value form.
func parseScalar(t Type, s string) (any, error) {
	switch t.Kind {
	case Bool:
		switch strings.ToLower(s) {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a bool", s)
	case String:
		v := s
		if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
			u, err := unquote(s)
			if err != nil {
				return nil, err
			}
			v = u
		}
		if t.StringBound > 0 && len(v) > t.StringBound {
			return nil, fmt.Errorf("%d bytes, bound is %d", len(v), t.StringBound)
		}
		return v, nil
	case Float32, Float64:
		bits := 64
		if t.Kind == Float32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not a %s", s, t.Kind)
		}
		if t.Kind == Float32 {
			return float32(f), nil
		}
		return f, nil
	case Uint64:
		u, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a uint64", s)
		}
		return u, nil
	case Message, KindInvalid:
		return nil, fmt.Errorf("type %s has no literal", t)
	}
	i, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a %s", s, t.Kind)
	}
	return intValue(t.Kind, i)
}

// intValue converts i to the Go form of an integer kind, refusing values
// out of its range.
func intValue(k Kind, i int64) (any, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch k {
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case Byte, Char, Uint8:
		lo, hi = 0, math.MaxUint8
	case Uint16:
		lo, hi = 0, math.MaxUint16
	case Uint32:
		lo, hi = 0, math.MaxUint32
	}
	if i < lo || i > hi {
		return nil, fmt.Errorf("%d out of range for %s", i, k)
	}
	switch k {
	case Int8:
		return int8(i), nil
	case Int16:
		return int16(i), nil
	case Int32:
		return int32(i), nil
	case Byte, Char, Uint8:
		return uint8(i), nil
	case Uint16:
		return uint16(i), nil
	case Uint32:
		return uint32(i), nil
	case Int64:
		return i, nil
	case Uint64:
		return uint64(i), nil
	}
	return nil, fmt.Errorf("%s is not an integer kind", k)
}

func unquote(s string) (string, error) {
	if s[0] == '\'' {
		// Go's Unquote reads '…' as a rune literal; re-quote as "…".
		s = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:len(s)-1], `"`, `\"`), `\'`, `'`) + `"`
	}
	u, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("bad quoted string %s", s)
	}
	return u, nil
}

// stripComment cuts a line at the first '#' outside quotes.
func stripComment(line string) string {
	if i, _ := indexUnquoted(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

// allIn says whether s is non-empty, starts with a byte first accepts
// and has only bytes rest accepts.
func allIn(s string, first, rest func(byte) bool) bool {
	if s == "" || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) bool { return c >= 'a' && c <= 'z' }
func upper(c byte) bool { return c >= 'A' && c <= 'Z' }
func digit(c byte) bool { return c >= '0' && c <= '9' }

func validPkg(s string) bool {
	return allIn(s, lower, func(c byte) bool { return lower(c) || digit(c) || c == '_' })
}

func validTypeName(s string) bool {
	return allIn(s, upper, func(c byte) bool { return lower(c) || upper(c) || digit(c) })
}

func validFieldName(s string) bool { return validPkg(s) && !strings.HasSuffix(s, "_") }

func validConstName(s string) bool {
	return allIn(s, upper, func(c byte) bool { return upper(c) || digit(c) || c == '_' })
}
