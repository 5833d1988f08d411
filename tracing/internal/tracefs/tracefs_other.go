//go:build !linux

package tracefs

import (
	"errors"
	"fmt"
)

var errNoTracefs = fmt.Errorf("tracefs: %w (Linux only)", errors.ErrUnsupported)

// Root reports that tracefs exists only on Linux.
func Root() (string, error) { return "", errNoTracefs }

// Instance is a trace instance; not available off Linux.
type Instance struct {
	// Reaped is always empty off Linux.
	Reaped []string
}

// Open reports that tracefs exists only on Linux.
func Open(Options) (*Instance, error) { return nil, errNoTracefs }

// Mark reports that tracefs exists only on Linux.
func (*Instance) Mark([]byte) error { return errNoTracefs }

// SetOn reports that tracefs exists only on Linux.
func (*Instance) SetOn(bool) error { return errNoTracefs }

// Read reports that tracefs exists only on Linux.
func (*Instance) Read(int64) ([]byte, error) { return nil, errNoTracefs }

// MarkerFile is empty off Linux.
func (*Instance) MarkerFile() string { return "" }

// Close does nothing off Linux.
func (*Instance) Close() error { return nil }
