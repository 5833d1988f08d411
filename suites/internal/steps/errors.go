package steps

import "errors"

// Sentinels; compare with errors.Is.
var (
	// ErrNoLink: the rack has no link of the transport a step needs; the
	// spec skips with the message (a rack need not have every transport).
	ErrNoLink = errors.New("rack has no link for this transport")
)
