//go:build !linux

package netns

import (
	"errors"
	"fmt"
	"os"
)

// errNotLinux is what Available, New and NewPair return off Linux. It
// matches both ErrUnavailable and errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("%w: network namespaces need Linux: %w", ErrUnavailable, errors.ErrUnsupported)

func osAvailable() error { return errNotLinux }

// setns is never reached off Linux: New fails first.
func setns(f *os.File) error { return errNotLinux }

// killInside is never reached off Linux: there are no namespaces to reap.
func killInside(string) ([]int, error) { return nil, errNotLinux }
