// Package kind holds the enumerations that cross the controller → agent →
// report seam: the send path, the wait strategy, reliability, the method
// kind of a latency figure, the middleware measured and the transport
// class a comparison groups by. Each is decoded once, here, from the text
// that the wire (agentproto), the result file (report) and the command
// lines carry; every other package compares typed values.
//
// The text of every value is the one result files and protocol lines
// already carry, so files written before these types existed read back
// unchanged. UnmarshalText accepts "" as the zero value (a field the
// writer left out) and refuses any other unknown text with an error that
// names the allowed values.
//
// It is a leaf: it imports only the standard library, so middleware,
// agentproto, report, rig and the suites can all use it without an
// up-arrow (docs/architecture.md). Values are plain data, safe for
// concurrent use.
package kind

import (
	"errors"
	"fmt"
	"strings"
)

// SimPrefix marks a chip reference as a simulated GPIO chip: "sim:NAME".
const SimPrefix = "sim:"

// Chip is a GPIO chip reference as rack files, line specs and the agent
// protocol carry it: a real chip by name ("gpiochip2"), path
// ("/dev/gpiochip2") or label, or a simulated chip (gpio/gpiosim) as
// "sim:NAME". Whether it is simulated is decided here, once, by Sim;
// callers never look at the prefix. The zero value is no chip.
type Chip string

// SimChip is the reference of the simulated chip name.
func SimChip(name string) Chip { return Chip(SimPrefix + name) }

// Sim returns the simulated chip's name (without "sim:") and true, or
// "" and false for a real chip. "sim:" alone is simulated with an empty
// name, which Valid refuses.
func (c Chip) Sim() (name string, ok bool) {
	if name, ok = strings.CutPrefix(string(c), SimPrefix); !ok {
		return "", false
	}
	return name, true
}

// IsSim reports whether c names a simulated chip.
func (c Chip) IsSim() bool { return strings.HasPrefix(string(c), SimPrefix) }

// Valid reports whether c names a chip: not empty, and not "sim:"
// without a name.
func (c Chip) Valid() bool { return c != "" && c != SimPrefix }

// String returns the reference as written ("gpiochip2", "sim:rack").
func (c Chip) String() string { return string(c) }

// MarshalText returns the reference as written.
func (c Chip) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText takes the reference as written; any text is a reference
// (a chip's label is free text), so it never fails: Valid says whether
// it names a chip, and the rack validation reports where it does not.
func (c *Chip) UnmarshalText(b []byte) error { *c = Chip(b); return nil }

// ErrUnknown is matched (errors.Is) by every refusal of UnmarshalText and
// the Parse functions.
var ErrUnknown = errors.New("kind: unknown value")

// parse returns the value among vals whose name is s, or an error naming
// what (e.g. "wait strategy") and the allowed names.
func parse[T ~string | ~uint8](what, s string, vals []T, name func(T) string) (T, error) {
	for _, v := range vals {
		if name(v) == s {
			return v, nil
		}
	}
	names := make([]string, 0, len(vals))
	for _, v := range vals {
		if n := name(v); n != "" {
			names = append(names, n)
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: %s %q: want %s", ErrUnknown, what, s, strings.Join(names, ", "))
}

// Wait is how a subscriber waits for the next message; it is
// middleware.WaitStrategy. The zero value is WaitFutex, the default of
// the agent protocol (a start without "wait").
type Wait uint8

// Wait strategies.
const (
	// WaitFutex sleeps on a futex; the publisher wakes it only when the
	// waiter count is non-zero (no syscall when nobody sleeps).
	WaitFutex Wait = iota
	// WaitSpin busy-polls: lowest latency, burns one CPU.
	WaitSpin
	// WaitHybrid spins for SubscriberOptions.SpinFor, then sleeps on the futex.
	WaitHybrid
)

// Waits are the wait strategies in their order.
var Waits = []Wait{WaitFutex, WaitSpin, WaitHybrid}

// String returns "futex", "spin" or "hybrid" (or "wait(N)" for a value
// outside the enumeration).
func (w Wait) String() string {
	switch w {
	case WaitFutex:
		return "futex"
	case WaitSpin:
		return "spin"
	case WaitHybrid:
		return "hybrid"
	}
	return fmt.Sprintf("wait(%d)", uint8(w))
}

// ParseWait decodes a wait strategy; "" is WaitFutex.
func ParseWait(s string) (Wait, error) {
	if s == "" {
		return WaitFutex, nil
	}
	return parse("wait strategy", s, Waits, Wait.String)
}

// MarshalText implements encoding.TextMarshaler.
func (w Wait) MarshalText() ([]byte, error) {
	if w > WaitHybrid {
		return nil, fmt.Errorf("%w: wait strategy %d", ErrUnknown, uint8(w))
	}
	return []byte(w.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler ("" is WaitFutex).
func (w *Wait) UnmarshalText(b []byte) error {
	v, err := ParseWait(string(b))
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// SendPath is how a publisher hands payloads to the middleware; "" means
// the default, SendCopy.
type SendPath string

// Send paths.
const (
	SendCopy SendPath = "copy" // Publisher.Send (one copy into the slot)
	SendLoan SendPath = "loan" // Publisher.Loan + Loan.Publish (zero copy)
)

// SendPaths are the send paths.
var SendPaths = []SendPath{SendCopy, SendLoan}

func (p SendPath) String() string { return string(p) }

// MarshalText implements encoding.TextMarshaler.
func (p SendPath) MarshalText() ([]byte, error) { return marshal("send path", p, SendPaths) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *SendPath) UnmarshalText(b []byte) error { return unmarshal("send path", b, p, SendPaths) }

// Reliability is a case's or topic's delivery guarantee as the report
// names it; "" is a case that does not say (e.g. a soak total).
type Reliability string

// Reliabilities.
const (
	Reliable   Reliability = "reliable"
	BestEffort Reliability = "best-effort"
)

// Reliabilities are the reliabilities.
var Reliabilities = []Reliability{Reliable, BestEffort}

// ReliabilityOf names a topic: Reliable when reliable, else BestEffort.
func ReliabilityOf(reliable bool) Reliability {
	if reliable {
		return Reliable
	}
	return BestEffort
}

func (r Reliability) String() string { return string(r) }

// MarshalText implements encoding.TextMarshaler.
func (r Reliability) MarshalText() ([]byte, error) { return marshal("reliability", r, Reliabilities) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Reliability) UnmarshalText(b []byte) error {
	return unmarshal("reliability", b, r, Reliabilities)
}

// MethodKind is how a latency figure was obtained.
type MethodKind string

// Method kinds.
const (
	// OneWay: receive time − send time on two (PTP-synchronised) clocks or
	// one shared clock; uncertainty is the clock offset bound.
	OneWay MethodKind = "one-way"
	// RTTHalf: half the round trip on one clock; assumes a symmetric path.
	RTTHalf MethodKind = "rtt-half"
)

// MethodKinds are the method kinds.
var MethodKinds = []MethodKind{OneWay, RTTHalf}

func (k MethodKind) String() string { return string(k) }

// MarshalText implements encoding.TextMarshaler.
func (k MethodKind) MarshalText() ([]byte, error) { return marshal("method kind", k, MethodKinds) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *MethodKind) UnmarshalText(b []byte) error {
	return unmarshal("method kind", b, k, MethodKinds)
}

// Middleware is the bus a case measured: hilrig's own ("" or Hilrig) or a
// peer the agent was built with (docs/peers.md).
type Middleware string

// Middlewares measured.
const (
	Hilrig     Middleware = "hilrig"
	CycloneDDS Middleware = "cyclonedds"
	FastDDSSHM Middleware = "fastdds-shm"
	FastDDSUDP Middleware = "fastdds-udp"
	Iceoryx    Middleware = "iceoryx"
)

// Middlewares are the middlewares, hilrig first.
var Middlewares = []Middleware{Hilrig, CycloneDDS, FastDDSSHM, FastDDSUDP, Iceoryx}

// Name is m with "" read as Hilrig.
func (m Middleware) Name() Middleware {
	if m == "" {
		return Hilrig
	}
	return m
}

// IsPeer reports whether m is a peer, not hilrig's own.
func (m Middleware) IsPeer() bool { return m.Name() != Hilrig }

func (m Middleware) String() string { return string(m) }

// MarshalText implements encoding.TextMarshaler.
func (m Middleware) MarshalText() ([]byte, error) { return marshal("middleware", m, Middlewares) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Middleware) UnmarshalText(b []byte) error {
	return unmarshal("middleware", b, m, Middlewares)
}

// Class is the transport class of the middleware comparison (issue 19,
// seed 000 §3.4): a peer is only comparable with hilrig on the same class.
type Class string

// Transport classes.
const (
	ClassInProcess    Class = "in-process"
	ClassSharedMemory Class = "shared memory"
	ClassUDPOneHost   Class = "UDP, one host"
	ClassUDPBoards    Class = "UDP, between boards"
	// ClassUDP is a UDP case whose route does not say whether its two
	// ends shared a kernel (a result written before cases carried their
	// route).
	ClassUDP Class = "UDP"
)

// Classes are the transport classes.
var Classes = []Class{ClassInProcess, ClassSharedMemory, ClassUDPOneHost, ClassUDPBoards, ClassUDP}

func (c Class) String() string { return string(c) }

// MarshalText implements encoding.TextMarshaler.
func (c Class) MarshalText() ([]byte, error) { return marshal("transport class", c, Classes) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Class) UnmarshalText(b []byte) error { return unmarshal("transport class", b, c, Classes) }

func str[T ~string](v T) string { return string(v) }

func marshal[T ~string](what string, v T, vals []T) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	if _, err := parse(what, string(v), vals, str[T]); err != nil {
		return nil, err
	}
	return []byte(v), nil
}

func unmarshal[T ~string](what string, b []byte, p *T, vals []T) error {
	if len(b) == 0 {
		*p = ""
		return nil
	}
	v, err := parse(what, string(b), vals, str[T])
	if err != nil {
		return err
	}
	*p = v
	return nil
}
