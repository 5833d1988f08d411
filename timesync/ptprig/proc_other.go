//go:build !linux

package ptprig

import "syscall"

// daemonProcAttr is never used off Linux: Start fails first (Available
// needs network namespaces, which need Linux).
func daemonProcAttr() *syscall.SysProcAttr { return nil }

// killGroup is never reached off Linux (no daemon is ever started).
func killGroup(pid int) {}
