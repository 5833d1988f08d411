//go:build !unix

package harness

import (
	"errors"
	"fmt"
)

// lockDir fails off Unix: merging per-suite reports relies on flock(2),
// and the suites run on Linux only.
func lockDir(dir string) (func(), error) {
	return nil, fmt.Errorf("%w: lock %s: flock needs a Unix system: %w", ErrReport, dir, errors.ErrUnsupported)
}
