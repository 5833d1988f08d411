//go:build unix

package leasecli

import "syscall"

// detached runs the keeper in its own session: no terminal signals from
// the shell it holds the lease for.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
