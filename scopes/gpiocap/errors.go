package gpiocap

import "errors"

// Errors of this package wrap the [scopes] sentinels callers already
// branch on (scopes.ErrBadConfig, scopes.ErrNotSupported,
// scopes.ErrNotConfigured, scopes.ErrClosed) or the [gpio] ones from
// opening the watch (gpio.ErrChipMissing, gpio.ErrBusy, …), with the
// channel and line as context. The sentinel below is this package's own.
var (
	// ErrCaptureStopped: the background read of the watch failed (the chip
	// went away, the kernel returned an error); the capture holds the
	// edges read before the failure and every later call reports this.
	ErrCaptureStopped = errors.New("gpiocap: capture stopped")
)
