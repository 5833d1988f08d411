//go:build !unix

package leasecli

import "syscall"

// detached: no sessions here (and no keeper: lease.PidFD is Linux only).
func detached() *syscall.SysProcAttr { return nil }
