//go:build !linux

// Package serial opens a serial device raw; Linux only.
package serial

import (
	"errors"
	"fmt"
	"os"
)

// Open is not available outside Linux.
func Open(path string, _ int, _ string) (*os.File, error) {
	return nil, fmt.Errorf("serial %s: %w", path, errors.ErrUnsupported)
}
