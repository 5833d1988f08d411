package report

import "errors"

// Sentinel errors of package report. Errors returned by this package wrap one
// of these with context (file, line, field) so callers can test with
// errors.Is and humans can read what went wrong.
var (
	// ErrSchemaVersion marks a result or checkpoint file written with a schema
	// version this build does not understand (newer, or unknown).
	ErrSchemaVersion = errors.New("report: unsupported schema version")
	// ErrBadHistogram marks an encoded histogram that cannot be decoded.
	ErrBadHistogram = errors.New("report: bad histogram encoding")
	// ErrBadResult marks a result file that is not valid JSON of the result model.
	ErrBadResult = errors.New("report: bad result file")
	// ErrRegression marks a comparison whose verdict is "regressed beyond the
	// threshold". The command maps it to exit status 3.
	ErrRegression = errors.New("report: regression")
)
