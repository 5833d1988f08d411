//go:build !linux

package counters

import (
	"errors"
	"fmt"
)

var errProc = fmt.Errorf("counters: /proc: %w (Linux only)", errors.ErrUnsupported)

// Read reports that the counters come from /proc, Linux only.
func Read(int, []int) (Sample, error) { return Sample{}, errProc }

// Mappings reports that smaps is Linux only.
func Mappings(int, uint64, uint64) ([]Mapping, error) { return nil, errProc }
