//go:build unix

package ddsshm

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes f's flock without blocking (released when f is closed);
// owned reports that another process holds it.
func tryLock(f *os.File) (owned bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
