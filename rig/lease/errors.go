package lease

import (
	"errors"
	"fmt"
)

// ErrHeld is returned by Acquire when a live holder has the rack.
var ErrHeld = errors.New("lease: rack is leased")

// ErrNotHeld is returned by Release when the lease is not the caller's.
var ErrNotHeld = errors.New("lease: not the holder")

// ErrUnsafeDir is matched by every *DirError: the lease directory (or a
// file in it) is not one the rig may trust.
var ErrUnsafeDir = errors.New("lease: unsafe lease directory")

// DirError says which path of the lease directory was refused and by
// which rule.
type DirError struct {
	Path string
	Rule string // e.g. "owned by uid 1000; …"
}

func (e *DirError) Error() string { return fmt.Sprintf("lease: %s: %s", e.Path, e.Rule) }

// Is makes every *DirError match ErrUnsafeDir.
func (e *DirError) Is(target error) bool { return target == ErrUnsafeDir }
