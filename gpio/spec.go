package gpio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/internal/kind"
)

// SimPrefix marks a chip reference as a simulated chip: "sim:NAME".
const SimPrefix = kind.SimPrefix

// Chip is a chip reference: a name ("gpiochip0"), path
// ("/dev/gpiochip0"), label, or a simulated chip "sim:NAME"; see
// kind.Chip, which decides once whether it is simulated (Sim, IsSim).
type Chip = kind.Chip

// SimChip returns the reference of the simulated chip name ("sim:NAME").
func SimChip(name string) Chip { return kind.SimChip(name) }

// DefaultConsumer is the consumer label used when a spec sets none.
const DefaultConsumer = "hilrig"

// LineSpec names one line and how to request it. It is pure data (rack
// fixtures carry it in YAML); Open and Watch turn it into a live line.
//
// In YAML either the mapping form
//
//	chip: gpiochip0        # name, /dev path, chip label, or sim:NAME
//	line: "17"             # offset or line name
//	active_low: true
//	drive: open-drain      # push-pull (default), open-drain, open-source
//	consumer: tx-marker
//
// or the compact text form "gpiochip0/17,active-low,open-drain,consumer=tx-marker"
// (see UnmarshalText) is accepted.
type LineSpec struct {
	// Chip is a chip name ("gpiochip0"), path ("/dev/gpiochip0"), label
	// ("pinctrl-bcm2711") or simulated chip ("sim:rack").
	Chip kind.Chip `yaml:"chip" json:"chip"`
	// Line is the offset ("17") or the line name ("GPIO17", "MARK_TX").
	Line string `yaml:"line" json:"line"`
	// ActiveLow makes the active (marked) level the low voltage.
	ActiveLow bool `yaml:"active_low,omitempty" json:"active_low,omitempty"`
	// Drive of an output: push-pull (default), open-drain, open-source.
	Drive Drive `yaml:"drive,omitempty" json:"drive,omitempty"`
	// Consumer is the label other users see holding the line; default
	// DefaultConsumer.
	Consumer string `yaml:"consumer,omitempty" json:"consumer,omitempty"`
}

// ParseLineSpec parses the compact text form, see UnmarshalText.
func ParseLineSpec(s string) (LineSpec, error) {
	var ls LineSpec
	err := ls.UnmarshalText([]byte(s))
	return ls, err
}

// UnmarshalText parses "CHIP/LINE[,OPTION...]". CHIP is everything before
// the last '/', so "/dev/gpiochip0/17" works. Options: active-low,
// push-pull, open-drain, open-source, consumer=LABEL.
func (s *LineSpec) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	parts := strings.Split(text, ",")
	head := parts[0]
	i := strings.LastIndexByte(head, '/')
	if i <= 0 || i == len(head)-1 {
		return fmt.Errorf("gpio: line spec %q: want CHIP/LINE[,options], e.g. gpiochip0/17 or sim:rack/3: %w", text, ErrInvalidSpec)
	}
	ls := LineSpec{Chip: kind.Chip(strings.TrimSpace(head[:i])), Line: strings.TrimSpace(head[i+1:])}
	for _, o := range parts[1:] {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			// tolerate "a/1,,active-low" and a trailing comma
		case o == "active-low" || o == "active_low":
			ls.ActiveLow = true
		case strings.HasPrefix(o, "consumer="):
			ls.Consumer = strings.TrimSpace(strings.TrimPrefix(o, "consumer="))
		default:
			var d Drive
			if err := d.UnmarshalText([]byte(o)); err != nil {
				return fmt.Errorf("gpio: line spec %q: unknown option %q (want active-low, push-pull, open-drain, open-source or consumer=LABEL): %w", text, o, ErrInvalidSpec)
			}
			ls.Drive = d
		}
	}
	if err := ls.Validate(); err != nil {
		return err
	}
	*s = ls
	return nil
}

// MarshalText returns the compact text form.
func (s LineSpec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String returns the compact text form, e.g. "sim:rack/3,active-low".
func (s LineSpec) String() string {
	var b strings.Builder
	b.WriteString(s.Chip.String())
	b.WriteByte('/')
	b.WriteString(s.Line)
	if s.ActiveLow {
		b.WriteString(",active-low")
	}
	if s.Drive != DrivePushPull {
		b.WriteString(",")
		b.WriteString(s.Drive.String())
	}
	if s.Consumer != "" {
		b.WriteString(",consumer=")
		b.WriteString(s.Consumer)
	}
	return b.String()
}

// Validate checks the spec without touching hardware; the error names the
// offending field.
func (s LineSpec) Validate() error {
	switch {
	case !s.Chip.Valid():
		return fmt.Errorf("gpio: line spec %q: field chip is empty: %w", s.String(), ErrInvalidSpec)
	case s.Line == "":
		return fmt.Errorf("gpio: line spec %q: field line is empty (want an offset or a line name): %w", s.String(), ErrInvalidSpec)
	case len(s.Consumer) > 31:
		return fmt.Errorf("gpio: line spec %q: field consumer is %d bytes, the kernel keeps 31: %w", s.String(), len(s.Consumer), ErrInvalidSpec)
	case s.Drive > DriveOpenSource:
		return fmt.Errorf("gpio: line spec %q: field drive %d unknown: %w", s.String(), s.Drive, ErrInvalidSpec)
	}
	if n, err := strconv.Atoi(s.Line); err == nil && n < 0 {
		return fmt.Errorf("gpio: line spec %q: field line is negative: %w", s.String(), ErrInvalidSpec)
	}
	return nil
}

// IsSim reports whether the spec names a simulated chip.
func (s LineSpec) IsSim() bool { return s.Chip.IsSim() }

func (s LineSpec) request() (core.Request, error) {
	if err := s.Validate(); err != nil {
		return core.Request{}, err
	}
	chip := s.Chip.String()
	if name, ok := s.Chip.Sim(); ok {
		chip = name
	}
	r := core.Request{Chip: chip, Offset: -1, ActiveLow: s.ActiveLow,
		Drive: s.Drive, Consumer: s.Consumer}
	if r.Consumer == "" {
		r.Consumer = DefaultConsumer
	}
	if n, err := strconv.Atoi(s.Line); err == nil {
		r.Offset = n
	} else {
		r.Name = s.Line
	}
	return r, nil
}
