package dut

import "errors"

// Sentinel errors; compare with errors.Is. Ports on a bus the runner does
// not drive yet wrap errors.ErrUnsupported instead.
var (
	// ErrExternal: the rig did not start this dut (external: true), so it
	// cannot kill or restart it.
	ErrExternal = errors.New("dut: external program")
	// ErrStopped: the program was stopped for good (Program.Stop).
	ErrStopped = errors.New("dut: stopped")
	// ErrNotReady: the dut did not answer a readiness probe in time.
	ErrNotReady = errors.New("dut: not answering")
)

// ErrToolMissing: a dut needs a tool this machine lacks to be built or
// driven (the C example's idlc, cc and Cyclone DDS's development files);
// the error names it. Suites skip on it, saying why.
var ErrToolMissing = errors.New("dut: tool missing")
