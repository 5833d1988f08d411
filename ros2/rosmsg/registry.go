package rosmsg

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hilrig/hilrig/internal/safefile"
)

// The shipped definitions, written from the public ROS 2 interface
// definitions (ros2/common_interfaces, ros2/rcl_interfaces): field lists
// and constants as there, comments left out. msgs/<pkg>/<Name>.msg.
//
//go:embed msgs
var shippedFS embed.FS

// maxMsgFile bounds a user's .msg file; real ones are a few KiB.
const maxMsgFile = 1 << 20

// Registry holds message definitions by full name ("sensor_msgs/Imu") and
// builds codecs from them. Not safe for concurrent mutation; once filled,
// concurrent Codec and Definition calls are safe (they only read).
type Registry struct {
	defs map[string]*Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{defs: map[string]*Definition{}} }

// Shipped returns a registry holding the shipped definitions
// (ShippedNames).
func Shipped() (*Registry, error) {
	r := NewRegistry()
	err := fs.WalkDir(shippedFS, "msgs", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := shippedFS.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := path.Base(path.Dir(p))
		return r.AddText(pkg+"/"+strings.TrimSuffix(path.Base(p), ".msg"), string(b))
	})
	if err != nil {
		return nil, fmt.Errorf("rosmsg: shipped definitions: %w", err)
	}
	return r, nil
}

// ShippedNames lists the shipped message types, sorted.
func ShippedNames() []string {
	r, err := Shipped()
	if err != nil {
		return nil
	}
	return r.Names()
}

// Add adds a parsed definition. Adding the same name again with the same
// text is a no-op; with different text it is an error.
func (r *Registry) Add(d *Definition) error {
	if old, ok := r.defs[d.FullName()]; ok {
		if old.Text == d.Text {
			return nil
		}
		return fmt.Errorf("rosmsg: %s is already defined with different text", d.FullName())
	}
	r.defs[d.FullName()] = d
	return nil
}

// AddText parses text as the message fullName ("pkg/Name") and adds it.
func (r *Registry) AddText(fullName, text string) error {
	pkg, name, ok := strings.Cut(fullName, "/")
	if !ok {
		return fmt.Errorf("rosmsg: %q: want package/Name", fullName)
	}
	d, err := Parse(pkg, name, text)
	if err != nil {
		return err
	}
	return r.Add(d)
}

// AddFile reads and adds a .msg file. Its name comes from the path, as in
// a ROS 2 package: .../<pkg>/msg/<Name>.msg (or .../<pkg>/<Name>.msg).
func (r *Registry) AddFile(file string) error {
	if filepath.Ext(file) != ".msg" {
		return fmt.Errorf("rosmsg: %s: not a .msg file", file)
	}
	dir := filepath.Dir(file)
	if filepath.Base(dir) == "msg" {
		dir = filepath.Dir(dir)
	}
	pkg, name := filepath.Base(dir), strings.TrimSuffix(filepath.Base(file), ".msg")
	b, err := safefile.Read(file, maxMsgFile, "a .msg file")
	if err != nil {
		return fmt.Errorf("rosmsg: %w", err)
	}
	if err := r.AddText(pkg+"/"+name, string(b)); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// Names lists the registry's message types, sorted.
func (r *Registry) Names() []string {
	n := make([]string, 0, len(r.defs))
	for k := range r.defs {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// Definition returns the definition of fullName.
func (r *Registry) Definition(fullName string) (*Definition, bool) {
	d, ok := r.defs[normalizeName(fullName)]
	return d, ok
}

// normalizeName accepts "pkg/msg/Name" for "pkg/Name".
func normalizeName(s string) string {
	if p, n, ok := strings.Cut(s, "/msg/"); ok {
		return p + "/" + n
	}
	return s
}

// Dependencies returns the message types fullName uses, directly or
// not, in the order they are first met (depth first), without fullName.
// Errors name a missing type and who needs it, or a cycle.
func (r *Registry) Dependencies(fullName string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var walk func(name string, stack []string) error
	walk = func(name string, stack []string) error {
		if slices.Contains(stack, name) {
			return fmt.Errorf("rosmsg: %s contains itself (%s)", name, strings.Join(append(stack, name), " → "))
		}
		d, ok := r.defs[name]
		if !ok {
			if len(stack) == 0 {
				return fmt.Errorf("rosmsg: unknown message type %s", name)
			}
			return fmt.Errorf("rosmsg: %s needs %s, which is not defined", stack[len(stack)-1], name)
		}
		stack = append(stack, name)
		for _, f := range d.Fields {
			if f.Type.Kind != Message {
				continue
			}
			if err := walk(f.Type.Msg, stack); err != nil {
				return err
			}
			if !seen[f.Type.Msg] {
				seen[f.Type.Msg] = true
				out = append(out, f.Type.Msg)
			}
		}
		return nil
	}
	if err := walk(normalizeName(fullName), nil); err != nil {
		return nil, err
	}
	return out, nil
}

// FullText is fullName's definition followed by those of every type it
// uses, in the concatenated form ROS 2 tools exchange (rosbag2, MCAP,
// Foxglove): sections separated by a line of '=' and headed "MSG: pkg/Name".
func (r *Registry) FullText(fullName string) (string, error) {
	deps, err := r.Dependencies(fullName)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(r.defs[normalizeName(fullName)].Text, "\n"))
	b.WriteString("\n")
	for _, dn := range deps {
		b.WriteString(strings.Repeat("=", 80) + "\nMSG: " + dn + "\n")
		b.WriteString(strings.TrimRight(r.defs[dn].Text, "\n"))
		b.WriteString("\n")
	}
	return b.String(), nil
}
