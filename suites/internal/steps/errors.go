package steps

import "errors"

// Sentinels; compare with errors.Is.
var (
	// ErrNoLink: the rack has no link of the transport a step needs; the
	// spec skips with the message (a rack need not have every transport).
	ErrNoLink = errors.New("rack has no link for this transport")
	// ErrPTPGate: the rack claims ptp but one-way samples of a cross-host
	// flow cannot be gated (a board names no ptp4l socket, its socket is
	// out of the controller's reach, or ptp4l does not answer).
	ErrPTPGate = errors.New("cannot PTP-gate one-way samples")
	// ErrGateIncomplete: the subscribers' windows do not hold every
	// latency sample of their finals, so samples could be neither judged
	// nor counted as excluded.
	ErrGateIncomplete = errors.New("PTP gate: windows incomplete")
)
