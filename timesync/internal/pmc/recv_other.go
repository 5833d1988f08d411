//go:build !linux

package pmc

import (
	"errors"
	"fmt"
)

// recvNonblock drains nothing off Linux (ptp4l and its UDS management
// socket are Linux-only; no Client ever connects).
func recvNonblock(fd uintptr, b []byte) (int, error) {
	return 0, fmt.Errorf("pmc: needs Linux: %w", errors.ErrUnsupported)
}
