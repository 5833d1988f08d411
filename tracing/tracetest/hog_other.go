//go:build !linux

package tracetest

import (
	"errors"
	"fmt"
	"time"
)

// RunHogIfChild does nothing off Linux.
func RunHogIfChild() {}

// StartHog reports that the hog needs Linux scheduling calls.
func StartHog(int, time.Duration) (func() error, error) {
	return nil, fmt.Errorf("tracetest: hog: %w (Linux only)", errors.ErrUnsupported)
}
