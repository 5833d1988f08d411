package bench

import (
	"errors"

	"github.com/hilrig/hilrig/internal/cli"
)

// Sentinel errors; compare with errors.Is. Returned errors wrap them with the
// transport, size or tool they concern.
var (
	// ErrUsage marks a bad command line (unknown flag, transport, size;
	// exit status 2): the binary's one usage error, cli.ErrUsage.
	ErrUsage = cli.ErrUsage
	// ErrPeer is returned when the pong/sink process failed, exited early or
	// sent something the protocol does not expect.
	ErrPeer = errors.New("bench: peer process failed")
	// ErrStalled is returned when a round trip did not complete because the
	// run was stopped (peer died, timeout, ctx cancelled).
	ErrStalled = errors.New("bench: run stopped before completion")
	// ErrToolMissing is returned when an external tool (ddsperf) is absent.
	ErrToolMissing = errors.New("bench: external tool missing")
	// ErrUnavailable is returned for a transport this build or machine
	// cannot run (a middleware transport reporting errors.ErrUnsupported on
	// this platform, no network namespaces).
	ErrUnavailable = errors.New("bench: transport unavailable")
)
