//go:build !linux

package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
)

var errUnsupported = fmt.Errorf("lease: OFD locks: %w (Linux only)", errors.ErrUnsupported)

type handle struct{ path string }

func openDir(string) (*handle, error)                               { return nil, errUnsupported }
func (h *handle) close()                                            {}
func (h *handle) lockGuard(context.Context, string) (func(), error) { return nil, errUnsupported }
func (h *handle) openLease(string) (*os.File, error)                { return nil, errUnsupported }
func (h *handle) create(string, []byte) (*os.File, error)           { return nil, errUnsupported }
func (h *handle) remove(string) error                               { return errUnsupported }
func (h *handle) same(*os.File, string) (bool, error)               { return false, errUnsupported }
func lockShared(*os.File) error                                     { return errUnsupported }
func heldByOther(*os.File) (bool, error)                            { return false, errUnsupported }

// PidFD is a pidfd of process pid; Linux only.
func PidFD(int) (*os.File, error) { return nil, errUnsupported }

// Keep holds a handed-off lease; Linux only.
func Keep(context.Context, *os.File, *os.File) error { return errUnsupported }
