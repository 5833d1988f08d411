//go:build !linux

package shm

import (
	"errors"
	"fmt"
)

// errNotLinux is what every constructor returns off Linux: segments are
// files in /dev/shm (tmpfs, fallocate, flock) woken through futex(2).
// It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("hilrig: shared memory transport needs Linux (futex, /dev/shm): %w", errors.ErrUnsupported)

func openOnce(path string, p Params, o OpenOptions) (*Segment, bool, error) {
	return nil, false, fmt.Errorf("%s: %w", path, errNotLinux)
}

// Close does nothing off Linux, where no Segment can be opened.
func (s *Segment) Close() error { return errNotLinux }

// NewAnon fails off Linux with an error matching errors.ErrUnsupported:
// the intra-process ring waits on futex(2) too.
func NewAnon(p Params, pid int, nowNs int64, huge bool) (*Region, bool, error) {
	return nil, false, errNotLinux
}

// FreeAnon does nothing off Linux, where NewAnon never succeeds.
func FreeAnon(r *Region) error { return errNotLinux }

// Inspect reports errNotLinux in Info.Err off Linux.
func Inspect(path string) Info { return Info{Path: path, Err: errNotLinux} }

// RemoveIfStale fails off Linux with an error matching errors.ErrUnsupported.
func RemoveIfStale(path string) (bool, error) {
	return false, fmt.Errorf("%s: %w", path, errNotLinux)
}

// fileRef is empty off Linux: no segment file is ever mapped.
type fileRef struct{}

// reserveSlots is a no-op off Linux: no segment file is ever mapped.
func (r *Region) reserveSlots(k, count int) error { return nil }

// checkSize is a no-op off Linux: no segment file is ever mapped.
func (r *Region) checkSize() error { return nil }

// CheckSize is a no-op off Linux, where no Segment can be opened.
func (s *Segment) CheckSize() error { return nil }
