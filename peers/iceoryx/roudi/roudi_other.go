//go:build !linux

package roudi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNoRouDi: iox-roudi is neither running nor installed.
var ErrNoRouDi = errors.New("iceoryx: RouDi (iox-roudi) is not running and cannot be started")

// ErrRunning: Start found a RouDi that no hilrig Start owns.
var ErrRunning = errors.New("iceoryx: a RouDi already runs on this host")

// Exclusive is unsupported here.
func Exclusive(context.Context) (func(), error) { return nil, errUnsupported }

var errUnsupported = fmt.Errorf("iceoryx RouDi: %w (Linux only)", errors.ErrUnsupported)

// Running reports whether a RouDi runs: unsupported here.
func Running() (bool, error) { return false, errUnsupported }

// RouDi is a daemon this process started.
type RouDi struct{}

// Start is unsupported here.
func Start(context.Context, int) (*RouDi, error) { return nil, errUnsupported }

// PID is the daemon's process id.
func (*RouDi) PID() int { return 0 }

// Stop is unsupported here.
func (*RouDi) Stop() error { return errUnsupported }

// StopWithin is unsupported off Linux.
func (*RouDi) StopWithin(time.Duration) error { return errUnsupported }
