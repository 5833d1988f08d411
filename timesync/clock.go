package timesync

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/timesync/internal/clk"
	"github.com/hilrig/hilrig/timesync/internal/phc"
)

// Clock names the clock a [Stamp] was read from.
type Clock uint8

const (
	// ClockUnknown is the zero value; a Stamp with it is invalid.
	ClockUnknown Clock = iota
	// Monotonic is CLOCK_MONOTONIC: shared by all processes of one host,
	// never stepped, meaningless across hosts. Single-host latency only.
	Monotonic
	// Realtime is CLOCK_REALTIME (UTC): comparable across hosts only when
	// each host's system clock is disciplined (ptp4l + phc2sys on a real
	// rack); the uncertainty comes from [Monitor.Window].
	Realtime
	// TAI is CLOCK_TAI: CLOCK_REALTIME plus the kernel's TAI offset (set by
	// phc2sys/ptp4l on a disciplined host; 0 on an undisciplined one).
	TAI
	// PHC is a NIC's PTP hardware clock (/dev/ptpN), read directly; TAI
	// timescale when the NIC is a ptp4l-disciplined slave.
	PHC
)

var clockNames = [...]string{ClockUnknown: "unknown", Monotonic: "monotonic", Realtime: "realtime", TAI: "tai", PHC: "phc"}

// String returns the lower-case name ("monotonic", "realtime", "tai", "phc").
func (c Clock) String() string {
	if int(c) < len(clockNames) {
		return clockNames[c]
	}
	return fmt.Sprintf("clock(%d)", uint8(c))
}

// MarshalText implements encoding.TextMarshaler.
func (c Clock) MarshalText() ([]byte, error) {
	if c == ClockUnknown || int(c) >= len(clockNames) {
		return nil, fmt.Errorf("%w: %d", ErrUnknownClock, uint8(c))
	}
	return []byte(clockNames[c]), nil
}

// UnmarshalText accepts the names String returns and the kernel spellings
// CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_TAI.
func (c *Clock) UnmarshalText(b []byte) error {
	switch string(b) {
	case "monotonic", "CLOCK_MONOTONIC":
		*c = Monotonic
	case "realtime", "CLOCK_REALTIME":
		*c = Realtime
	case "tai", "CLOCK_TAI":
		*c = TAI
	case "phc", "PHC":
		*c = PHC
	default:
		return fmt.Errorf("%w %q (want monotonic, realtime, tai or phc)", ErrUnknownClock, b)
	}
	return nil
}

// CrossHost reports whether stamps of this clock may be compared between
// hosts (given a locked PTP hierarchy).
func (c Clock) CrossHost() bool { return c == Realtime || c == TAI || c == PHC }

// Stamp is one clock reading: nanoseconds since the clock's epoch, and the
// clock it came from.
type Stamp struct {
	Ns    int64
	Clock Clock
}

// Sub returns s−o. It fails when the two come from different clocks: that
// difference has no meaning.
func (s Stamp) Sub(o Stamp) (time.Duration, error) {
	if s.Clock != o.Clock || s.Clock == ClockUnknown {
		return 0, fmt.Errorf("timesync: cannot subtract a %s stamp from a %s stamp", o.Clock, s.Clock)
	}
	return time.Duration(s.Ns - o.Ns), nil
}

// String formats the stamp as "<clock>:<ns>".
func (s Stamp) String() string { return fmt.Sprintf("%s:%d", s.Clock, s.Ns) }

// Stamper reads one clock. Safe for concurrent use; Now does not block and
// allocates nothing.
type Stamper struct {
	clock  Clock
	id     int32
	file   *os.File // PHC only
	closed atomic.Bool
}

// NewStamper returns a Stamper for a kernel clock (Monotonic, Realtime,
// TAI). For a PHC use [OpenPHC].
func NewStamper(c Clock) (*Stamper, error) {
	switch c {
	case Monotonic:
		return &Stamper{clock: c, id: clk.Monotonic}, nil
	case Realtime:
		return &Stamper{clock: c, id: clk.Realtime}, nil
	case TAI:
		return &Stamper{clock: c, id: clk.TAI}, nil
	case PHC:
		return nil, fmt.Errorf("%w: a PHC needs its device: use OpenPHC", ErrBadConfig)
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownClock, uint8(c))
}

// OpenPHC opens the PTP hardware clock of network interface iface
// read-only (it never adjusts it). It must be called in the network
// namespace that holds iface. An interface without a PHC (veth, virtio)
// gives an error wrapping [ErrNoPHC]. Close the Stamper when done.
func OpenPHC(iface string) (*Stamper, error) {
	dev, err := phc.Device(iface)
	if err != nil {
		return nil, fmt.Errorf("timesync: %w", err)
	}
	f, id, err := phc.Open(dev)
	if err != nil {
		return nil, fmt.Errorf("timesync: %w", err)
	}
	return &Stamper{clock: PHC, id: id, file: f}, nil
}

// PHCDevice returns the /dev/ptpN of iface, or an error wrapping [ErrNoPHC].
// It must run in iface's network namespace.
func PHCDevice(iface string) (string, error) {
	dev, err := phc.Device(iface)
	if err != nil {
		return "", fmt.Errorf("timesync: %w", err)
	}
	return dev, nil
}

// Clock returns which clock this Stamper reads.
func (s *Stamper) Clock() Clock { return s.clock }

// Now reads the clock. Monotonic goes through the vDSO (tens of ns);
// Realtime through time.Now (vDSO); TAI and PHC are a clock_gettime
// syscall. No allocation. The error is non-nil only for a closed PHC or a
// failed syscall.
func (s *Stamper) Now() (Stamp, error) {
	switch s.clock {
	case Monotonic:
		return Stamp{Ns: monoclock.Now(), Clock: Monotonic}, nil
	case Realtime:
		return Stamp{Ns: time.Now().UnixNano(), Clock: Realtime}, nil
	}
	if s.closed.Load() {
		return Stamp{}, ErrClosed
	}
	ns, err := clk.Gettime(s.id)
	if err != nil {
		return Stamp{}, fmt.Errorf("timesync: clock_gettime(%s): %w", s.clock, err)
	}
	return Stamp{Ns: ns, Clock: s.clock}, nil
}

// Close releases a PHC's file. Idempotent; ErrClosed on the second call.
func (s *Stamper) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}
