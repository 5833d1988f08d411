package soak

import "errors"

// Sentinel errors; returned errors wrap them with the file and line.
var (
	// ErrBadCheckpoint marks a checkpoint that cannot be read: no header, or
	// a corrupt line followed by good ones (a torn tail is tolerated).
	ErrBadCheckpoint = errors.New("soak: bad checkpoint")
	// ErrSchemaVersion marks a checkpoint of an unknown or newer version.
	ErrSchemaVersion = errors.New("soak: unsupported checkpoint schema version")
	// ErrExists marks Create on a path that already exists (use Resume).
	ErrExists = errors.New("soak: checkpoint exists")
	// ErrClosed marks use of a closed Checkpointer.
	ErrClosed = errors.New("soak: checkpointer closed")
	// ErrTooFewPoints marks a trend over fewer than 3 points.
	ErrTooFewPoints = errors.New("soak: too few points for a trend")
)
