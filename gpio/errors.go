package gpio

import "github.com/hilrig/hilrig/gpio/internal/core"

// Sentinels for conditions callers branch on; every error of this package
// and its backends wraps one of them in a *LineError that names the chip,
// the line and the cause. Compare with errors.Is.
var (
	// ErrChipMissing: no chip of that name, path or label (or the sim
	// chip's "missing" fault switch is on).
	ErrChipMissing = core.ErrChipMissing
	// ErrOffsetRange: the line offset is not below the chip's line count.
	ErrOffsetRange = core.ErrOffsetRange
	// ErrLineNotFound: no line of that name on the chip.
	ErrLineNotFound = core.ErrLineNotFound
	// ErrBusy: the line is held; LineError.Consumer names the holder.
	ErrBusy = core.ErrBusy
	// ErrPermission: the chip device cannot be opened; LineError.Group
	// names the group that owns /dev/gpiochipN.
	ErrPermission = core.ErrPermission
	// ErrKernelTooOld: the kernel lacks GPIO uAPI v2 (Linux < 5.10).
	ErrKernelTooOld = core.ErrKernelTooOld
	// ErrClosed: the marker or watcher was closed.
	ErrClosed = core.ErrClosed
	// ErrOverflow: edges were lost because the reader fell behind; the
	// error is an *OverflowError carrying the count.
	ErrOverflow = core.ErrOverflow
	// ErrNotSupported: the chip or kernel does not offer a requested
	// feature (an event clock, a drive).
	ErrNotSupported = core.ErrNotSupported
	// ErrInvalidSpec: a line spec or mode that cannot be parsed or is
	// inconsistent.
	ErrInvalidSpec = core.ErrInvalidSpec
)

// LineError names the operation, chip, line and cause of a failure.
type LineError = core.LineError

// OverflowError reports edges lost on one line of a watch.
type OverflowError = core.OverflowError
