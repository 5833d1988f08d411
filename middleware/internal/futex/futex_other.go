//go:build !linux

package futex

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// errNotLinux is returned by Wait and Wake off Linux, where there is no
// futex(2). Callers never get this far: the shared-memory transport that
// uses this leaf refuses to open off Linux. It matches errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("futex: needs Linux: %w", errors.ErrUnsupported)

// Wait fails off Linux with an error matching errors.ErrUnsupported.
func Wait(addr *uint32, val uint32, timeout time.Duration) error { return errNotLinux }

// WaitHeld fails off Linux with an error matching errors.ErrUnsupported.
func WaitHeld(addr *uint32, val uint32, timeout time.Duration) error { return errNotLinux }

// Wake fails off Linux with an error matching errors.ErrUnsupported.
func Wake(addr *uint32, n int) (int, error) { return 0, errNotLinux }

// Load is atomic.LoadUint32, here so callers of this leaf read the word the
// way they wait on it.
func Load(addr *uint32) uint32 { return atomic.LoadUint32(addr) }
