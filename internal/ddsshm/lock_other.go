//go:build !unix

package ddsshm

import (
	"errors"
	"os"
)

// tryLock: Fast DDS's lock files are flock()ed, which only Unix has here.
func tryLock(*os.File) (bool, error) { return false, errors.ErrUnsupported }
