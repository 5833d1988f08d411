package timesync

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Source is the status of one board's PTP daemon, as the health checks and
// the Monitor consume it. Implementations: [*PTP4L] (real) and
// timesyncsim.Source (fake). Status must be safe for concurrent use, block
// at most until ctx is done (plus its own per-request deadline) and return
// a Status whose ReadAt is set even when some fields are unknown.
type Source interface {
	Status(ctx context.Context) (Status, error)
}

// PortState is the PTP port state (IEEE 1588-2019 Table 20, plus ptp4l's
// GRAND_MASTER extension).
type PortState uint8

// Port states, numbered as on the wire.
const (
	PortStateUnknown PortState = iota
	PortStateInitializing
	PortStateFaulty
	PortStateDisabled
	PortStateListening
	PortStatePreMaster
	PortStateMaster
	PortStatePassive
	PortStateUncalibrated
	PortStateSlave
	PortStateGrandMaster
)

var portStateNames = [...]string{"UNKNOWN", "INITIALIZING", "FAULTY", "DISABLED", "LISTENING",
	"PRE_MASTER", "MASTER", "PASSIVE", "UNCALIBRATED", "SLAVE", "GRAND_MASTER"}

// String returns the pmc spelling (SLAVE, UNCALIBRATED, …).
func (s PortState) String() string {
	if int(s) < len(portStateNames) {
		return portStateNames[s]
	}
	return fmt.Sprintf("STATE(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s PortState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText accepts the pmc spellings, case-insensitively.
func (s *PortState) UnmarshalText(b []byte) error {
	for i, n := range portStateNames {
		if strings.EqualFold(n, string(b)) {
			*s = PortState(i)
			return nil
		}
	}
	return fmt.Errorf("timesync: unknown port state %q", b)
}

// ClockIdentity is a PTP clock identity (EUI-64), e.g. 02000a.fffe.e90001.
type ClockIdentity uint64

// String formats the identity as pmc does: xxxxxx.xxxx.xxxxxx.
func (c ClockIdentity) String() string {
	h := fmt.Sprintf("%016x", uint64(c))
	return h[0:6] + "." + h[6:10] + "." + h[10:16]
}

// MarshalText implements encoding.TextMarshaler.
func (c ClockIdentity) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses the pmc form (dots optional).
func (c *ClockIdentity) UnmarshalText(b []byte) error {
	h := strings.ReplaceAll(string(b), ".", "")
	if len(h) != 16 {
		return fmt.Errorf("timesync: clock identity %q: want 16 hex digits as xxxxxx.xxxx.xxxxxx", b)
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return fmt.Errorf("timesync: clock identity %q: %w", b, err)
	}
	*c = ClockIdentity(v)
	return nil
}

// ParseClockIdentity parses "02000a.fffe.e90001".
func ParseClockIdentity(s string) (ClockIdentity, error) {
	var c ClockIdentity
	err := c.UnmarshalText([]byte(s))
	return c, err
}

// ClockIdentityFromMAC derives the EUI-64 identity ptp4l uses for an EUI-48
// MAC (ff:fe inserted in the middle), e.g. 02:00:0a:e9:00:01 →
// 02000a.fffe.e90001.
func ClockIdentityFromMAC(mac string) (ClockIdentity, error) {
	var b [6]byte
	parts := strings.Split(mac, ":")
	if len(parts) != 6 {
		return 0, fmt.Errorf("timesync: MAC %q: want 6 colon-separated octets", mac)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return 0, fmt.Errorf("timesync: MAC %q: %w", mac, err)
		}
		b[i] = byte(v)
	}
	v := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | 0xff<<32 | 0xfe<<24 |
		uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5])
	return ClockIdentity(v), nil
}

// Status is one reading of a board's PTP daemon. Durations are
// nanosecond-resolution values as ptp4l reports them.
type Status struct {
	// ReadAt is the local time (CLOCK_REALTIME with Go's monotonic
	// reading) when the reading completed.
	ReadAt time.Time `json:"read_at"`
	// ClockIdentity is this board's own clock identity.
	ClockIdentity ClockIdentity `json:"clock_identity"`
	// Interface is the PTP port's network interface (PORT_PROPERTIES_NP).
	Interface string `json:"interface,omitempty"`
	// PortState of the (first) port.
	PortState PortState `json:"port_state"`
	// Offset from master: local clock minus master clock as last
	// measured (TIME_STATUS_NP master_offset). Frozen between Syncs, and
	// never cleared: after a fault ptp4l keeps reporting the offset it
	// measured before, until it measures a new one (see [Tracker]).
	Offset time.Duration `json:"offset_ns"`
	// CurrentOffset is CURRENT_DATA_SET offsetFromMaster. ptp4l sets it
	// together with Offset at every measurement but zeroes it when the
	// clock's data sets are reset (cold start, link loss): see
	// [Status.DataSetsReset]. The two come from separate management
	// requests, so a Sync measured between them makes them differ
	// without any reset.
	CurrentOffset time.Duration `json:"current_offset_ns"`
	// MeanPathDelay is the E2E/P2P mean path delay (CURRENT_DATA_SET).
	MeanPathDelay time.Duration `json:"mean_path_delay_ns"`
	// StepsRemoved between this clock and the grandmaster.
	StepsRemoved uint16 `json:"steps_removed"`
	// GMIdentity is the grandmaster ptp4l currently follows
	// (TIME_STATUS_NP gmIdentity).
	GMIdentity ClockIdentity `json:"gm_identity"`
	// GMPresent as ptp4l reports it. Not enough on its own: a slaveOnly
	// port keeps it true for good after the GM dies.
	GMPresent bool `json:"gm_present"`
	// GMQuality is the grandmaster's clockQuality as announced
	// (PARENT_DATA_SET grandmasterClockQuality).
	GMQuality ClockQuality `json:"gm_quality"`
	// PortEvents is what ptp4l pushed about the port's state since the
	// previous reading by the same reader (SUBSCRIBE_EVENTS_NP): a port
	// that left SLAVE and came back between two polls shows here.
	PortEvents PortEvents `json:"port_events"`
	// ParentPort is the port this clock syncs from (PARENT_DATA_SET).
	ParentPort string `json:"parent_port,omitempty"`
	// LastSyncIngress is when the last Sync arrived, on the clock ptp4l
	// timestamps with (Realtime for software timestamping, PHC for
	// hardware). It stops advancing when Syncs stop.
	LastSyncIngress Stamp `json:"last_sync_ingress"`
	// HasPHC is true when the port's interface has a PTP hardware clock
	// visible to the reader; then PHCSysOffset (CLOCK_REALTIME − PHC) and
	// PHCSysDelay (the read window, its uncertainty) are valid.
	HasPHC       bool          `json:"has_phc"`
	PHCDevice    string        `json:"phc_device,omitempty"`
	PHCSysOffset time.Duration `json:"phc_sys_offset_ns,omitempty"`
	PHCSysDelay  time.Duration `json:"phc_sys_delay_ns,omitempty"`
	// PHCNote says why HasPHC is false (no PHC on the interface,
	// interface not in this namespace, PHC lookup disabled).
	PHCNote string `json:"phc_note,omitempty"`
}

// ClockQuality is a PTP clockQuality (IEEE 1588-2019 7.6.2.5):
// clockClass (Table 4: 6 and 7 a grandmaster locked to a primary
// reference such as GPS, or in holdover; 248 the default of a
// free-running clock, which the sim rack's ptp4l grandmaster reports;
// 255 a slave-only clock), clockAccuracy (Table 5) and
// offsetScaledLogVariance.
type ClockQuality struct {
	Class    uint8  `json:"class"`
	Accuracy uint8  `json:"accuracy"`
	Variance uint16 `json:"variance"`
}

// ClassSlaveOnly is clockClass 255: a slave-only clock, never a
// grandmaster to lock to.
const ClassSlaveOnly = 255

// String formats it as "class 248, accuracy 0xfe, variance 0xffff".
func (q ClockQuality) String() string {
	return fmt.Sprintf("class %d, accuracy 0x%02x, variance 0x%04x", q.Class, q.Accuracy, q.Variance)
}

// PortEvents is what the ptp4l reader was told about its port's state
// between two readings: ptp4l pushes every port state change to a
// subscriber (SUBSCRIBE_EVENTS_NP with NOTIFY_PORT_STATE), so a change
// between two polls is not missed. The zero value is "no subscription".
type PortEvents struct {
	// Subscribed is true when the reader held a subscription over the
	// interval (from the previous reading, or from its start).
	Subscribed bool `json:"subscribed"`
	// Changes counts the port state changes ptp4l notified.
	Changes uint32 `json:"changes,omitempty"`
	// First is the first state notified (the one the port went to);
	// valid when Changes > 0.
	First PortState `json:"first,omitempty"`
	// Lost counts notifications that went missing (gaps in ptp4l's
	// sequence ids, renewals it did not acknowledge): changes may have
	// been missed.
	Lost uint32 `json:"lost,omitempty"`
	// Note says why there is no subscription (ptp4l too old, the socket
	// failed), "" otherwise.
	Note string `json:"note,omitempty"`
}

// DataSetsReset reports whether ptp4l reset its data sets and has not
// measured since: CURRENT_DATA_SET's offset is zeroed while
// TIME_STATUS_NP keeps the last one measured. Two offsets that differ
// but are both set are a Sync measured between the two requests
// (TIME_STATUS_NP, read second, holds the newer), not a reset.
func (s Status) DataSetsReset() bool { return s.CurrentOffset == 0 && s.Offset != 0 }
