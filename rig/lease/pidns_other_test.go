//go:build !linux

package lease_test

import (
	"errors"
	"syscall"
)

func pidNamespace() *syscall.SysProcAttr { return nil }

func mountOwnProc() error { return errors.ErrUnsupported }
