//go:build !linux

package procgroup

import (
	"errors"
	"os"
	"syscall"
)

// Attr sets nothing off Linux: the child stays in our process group.
func Attr() *syscall.SysProcAttr { return nil }

// Kill kills process pid only (no process group off Linux). A process
// already gone is not an error.
func Kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
