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
