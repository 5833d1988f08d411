package harness

import "errors"

// Sentinels; compare with errors.Is.
var (
	// ErrConfig: ginkgo.config or the rack fixture could not be loaded.
	ErrConfig = errors.New("harness: configuration")
	// ErrReport: the report could not be written, merged or read.
	ErrReport = errors.New("harness: report")
	// ErrEmpty: a result has no cases, or a case measured nothing.
	ErrEmpty = errors.New("harness: empty result")
	// ErrHealth: the rack failed a health check (a board unreachable or
	// running another build, a claimed capability not working).
	ErrHealth = errors.New("harness: rack not healthy")
)
