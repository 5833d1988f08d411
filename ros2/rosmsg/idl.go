package rosmsg

import (
	"fmt"
	"strings"
)

// IDL writes the OMG IDL of the named message types and every type they
// use, dependencies first, as the DDS side of ROS 2 declares them:
// `module pkg { module msg { module dds_ { struct Name_ { … }; }; }; };`,
// so a DDS program built from it (Cyclone's `idlc -t`, Fast DDS's
// `fastddsgen`) registers the type names ROS 2 nodes use
// (DDSTypeName). Constants are left out (they are not on the wire);
// a message with no field gets rosidl's `uint8
// structure_needs_at_least_one_member`. The kinds map as rosidl maps
// them: byte → octet, char → uint8, T[N] → an array member, T[<=N] →
// sequence<T, N>, T[] → sequence<T>, string<=N → string<N>.
func (r *Registry) IDL(names ...string) (string, error) {
	var order []string
	seen := map[string]bool{}
	for _, n := range names {
		deps, err := r.Dependencies(n)
		if err != nil {
			return "", err
		}
		for _, d := range append(deps, normalizeName(n)) {
			if !seen[d] {
				seen[d] = true
				order = append(order, d)
			}
		}
	}
	var b strings.Builder
	for _, n := range order {
		d := r.defs[n]
		fmt.Fprintf(&b, "module %s { module msg { module dds_ {\n  struct %s_ {\n", d.Package, d.Name)
		if len(d.Fields) == 0 {
			b.WriteString("    uint8 structure_needs_at_least_one_member;\n")
		}
		for _, f := range d.Fields {
			el := idlElem(f.Type)
			switch f.Type.Array {
			case NotArray:
				fmt.Fprintf(&b, "    %s %s;\n", el, f.Name)
			case Fixed:
				fmt.Fprintf(&b, "    %s %s[%d];\n", el, f.Name, f.Type.Len)
			case Bounded:
				fmt.Fprintf(&b, "    sequence<%s, %d> %s;\n", el, f.Type.Len, f.Name)
			case Unbounded:
				fmt.Fprintf(&b, "    sequence<%s> %s;\n", el, f.Name)
			}
		}
		b.WriteString("  };\n}; }; };\n")
	}
	return b.String(), nil
}

// idlElem is the IDL type of one element of t.
func idlElem(t Type) string {
	switch t.Kind {
	case Bool:
		return "boolean"
	case Byte:
		return "octet"
	case Char, Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "short"
	case Uint16:
		return "unsigned short"
	case Int32:
		return "long"
	case Uint32:
		return "unsigned long"
	case Int64:
		return "long long"
	case Uint64:
		return "unsigned long long"
	case Float32:
		return "float"
	case Float64:
		return "double"
	case String:
		if t.StringBound > 0 {
			return fmt.Sprintf("string<%d>", t.StringBound)
		}
		return "string"
	case Message:
		pkg, name, _ := strings.Cut(t.Msg, "/")
		return pkg + "::msg::dds_::" + name + "_"
	}
	return "invalid"
}
