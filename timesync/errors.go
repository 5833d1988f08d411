package timesync

import (
	"errors"

	"github.com/hilrig/hilrig/timesync/internal/phc"
	"github.com/hilrig/hilrig/timesync/internal/pmc"
)

// Errors callers branch on (compare with errors.Is). Messages returned by
// this package wrap them with the socket path, board and request.
var (
	// ErrPermission: ptp4l's management socket is 0660 root; the reader
	// must run as root (or in the socket's group).
	ErrPermission = pmc.ErrPermission
	// ErrNoSocket: nothing at the socket path; ptp4l is not running with
	// that uds_address.
	ErrNoSocket = pmc.ErrNoSocket
	// ErrNotListening: a socket file exists but no ptp4l is bound to it
	// (ptp4l died and left it behind).
	ErrNotListening = pmc.ErrNotListening
	// ErrNotSocket: the path exists but is no socket at all (a regular
	// file, a directory, /dev/null): the uds_address is wrong.
	ErrNotSocket = pmc.ErrNotSocket
	// ErrTimeout: ptp4l sent no matching reply within the per-request
	// deadline.
	ErrTimeout = pmc.ErrTimeout
	// ErrReplaced: the socket path now names another socket than the one
	// the reader was connected to (a second ptp4l bound the same path, or
	// ptp4l restarted): that reading is dropped and the reader has
	// reconnected to the new daemon.
	ErrReplaced = pmc.ErrReplaced
	// ErrManagementError: ptp4l answered MANAGEMENT_ERROR_STATUS.
	ErrManagementError = pmc.ErrManagementError
	// ErrNoPHC: the interface has no PTP hardware clock (veth, virtual
	// NICs); use CLOCK_REALTIME disciplined by ptp4l/phc2sys instead.
	ErrNoPHC = phc.ErrNoPHC
	// ErrClosed: the Source or Stamper was closed.
	ErrClosed = errors.New("timesync: closed")
	// ErrNotLocked: RequireLocked gave up; the wrapping error names the
	// board, the failed condition and the last values.
	ErrNotLocked = errors.New("timesync: not locked")
	// ErrUnknownClock: a clock name or id that is not one of [Clock]'s.
	ErrUnknownClock = errors.New("timesync: unknown clock")
	// ErrUnknownBoard: a board name the Monitor does not sample.
	ErrUnknownBoard = errors.New("timesync: unknown board")
	// ErrBadConfig: invalid options (the message names the field).
	ErrBadConfig = errors.New("timesync: bad config")
)
