// Package phc reads a NIC's PTP hardware clock through github.com/facebook/time/phc.
// Read-only by construction: it never calls AdjFreq, Step or SetTime, so
// nothing here can move a clock.
package phc

import (
	"errors"
	"time"
)

// ErrNoPHC: the interface exists but has no PTP hardware clock (veth,
// most virtual NICs, or a driver without PHC support).
var ErrNoPHC = errors.New("no PTP hardware clock")

// Offset is one PHC↔system clock comparison.
type Offset struct {
	// Offset is system time minus PHC time, at the best sample.
	Offset time.Duration
	// Delay is how long the best sample's read window was (its uncertainty).
	Delay time.Duration
	// SysTime is the system clock at the sample (CLOCK_REALTIME).
	SysTime time.Time
}
