package gpio

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ModeKind is how a marker shows a message.
type ModeKind uint8

const (
	// Toggle flips the level for each marked message, so every edge is one
	// message and the edge rate is the message rate.
	Toggle ModeKind = iota
	// Pulse raises the line and lowers it again after Mode.Width, for
	// scopes that trigger on a pulse; the rising edge marks the message.
	Pulse
)

// String returns "toggle" or "pulse".
func (k ModeKind) String() string {
	if k == Pulse {
		return "pulse"
	}
	if k == Toggle {
		return "toggle"
	}
	return fmt.Sprintf("mode(%d)", uint8(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k ModeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText accepts "toggle" or "pulse".
func (k *ModeKind) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "toggle", "":
		*k = Toggle
	case "pulse":
		*k = Pulse
	default:
		return fmt.Errorf("gpio: marker mode kind %q: want toggle or pulse: %w", string(b), ErrInvalidSpec)
	}
	return nil
}

// MaxPulseWidth bounds Mode.Width: Mark busy-waits for the width on the
// caller's goroutine, so it must stay short.
const MaxPulseWidth = 10 * time.Millisecond

// Mode is a marker mode. The zero value toggles on every message.
//
// Text form (flags, YAML scalars): "toggle", "pulse:5us", "every:4",
// "pulse:5us,every:4"; YAML mapping form: {kind: pulse, width: 5us, every: 4}.
type Mode struct {
	// Kind is Toggle or Pulse.
	Kind ModeKind `yaml:"kind" json:"kind"`
	// Width is the pulse width for Pulse (1ns..MaxPulseWidth). Mark holds
	// the line active this long (busy-waiting, to be exact at µs widths).
	Width time.Duration `yaml:"width,omitempty" json:"width,omitempty"`
	// Every marks only every k-th message (1st, k+1-th, ...), keeping
	// edges far enough apart for a scope at high message rates; 0 or 1 =
	// every message. Edge n then belongs to message (n-1)*Every+1.
	Every int `yaml:"every,omitempty" json:"every,omitempty"`
}

// ParseMode parses the text form, see Mode.
func ParseMode(s string) (Mode, error) {
	var m Mode
	err := m.UnmarshalText([]byte(s))
	return m, err
}

// UnmarshalText parses the text form, see Mode.
func (m *Mode) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	var out Mode
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		key, val, _ := strings.Cut(part, ":")
		switch strings.ToLower(key) {
		case "toggle", "":
			out.Kind = Toggle
		case "pulse":
			out.Kind = Pulse
			d, err := time.ParseDuration(val)
			if err != nil {
				return fmt.Errorf("gpio: marker mode %q: pulse width %q: want a duration like 5us: %w", text, val, ErrInvalidSpec)
			}
			out.Width = d
		case "every":
			k, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("gpio: marker mode %q: every %q: want an integer: %w", text, val, ErrInvalidSpec)
			}
			out.Every = k
		default:
			return fmt.Errorf("gpio: marker mode %q: unknown part %q (want toggle, pulse:WIDTH, every:K): %w", text, part, ErrInvalidSpec)
		}
	}
	if err := out.Validate(); err != nil {
		return err
	}
	if out.Every == 1 {
		out.Every = 0 // same meaning; one canonical form
	}
	*m = out
	return nil
}

// MarshalText returns the text form.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// String returns the text form.
func (m Mode) String() string {
	s := "toggle"
	if m.Kind == Pulse {
		s = "pulse:" + m.Width.String()
	}
	if m.Every > 1 {
		s += ",every:" + strconv.Itoa(m.Every)
	}
	return s
}

// Validate checks the mode; the error names the field.
func (m Mode) Validate() error {
	switch {
	case m.Kind > Pulse:
		return fmt.Errorf("gpio: marker mode: field kind %d unknown: %w", m.Kind, ErrInvalidSpec)
	case m.Kind == Pulse && (m.Width <= 0 || m.Width > MaxPulseWidth):
		return fmt.Errorf("gpio: marker mode %s: field width %v must be in (0, %v]: %w", m, m.Width, MaxPulseWidth, ErrInvalidSpec)
	case m.Kind == Toggle && m.Width != 0:
		return fmt.Errorf("gpio: marker mode %s: field width is only for pulse mode: %w", m, ErrInvalidSpec)
	case m.Every < 0:
		return fmt.Errorf("gpio: marker mode: field every %d is negative: %w", m.Every, ErrInvalidSpec)
	}
	return nil
}
