//go:build unix && !linux

package faultkit

import "syscall"

// helperProcAttr off Linux only makes the helper a process-group leader:
// there is no Pdeathsig. The suites run on Linux only; this keeps the
// package compiling elsewhere.
func helperProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
