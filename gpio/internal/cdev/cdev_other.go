//go:build !linux

package cdev

import (
	"context"
	"errors"
	"fmt"

	"github.com/hilrig/hilrig/gpio/internal/core"
)

// errNotLinux is what every constructor returns off Linux: the GPIO
// character device is a Linux uAPI. It matches both core.ErrNotSupported
// and errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("gpio: GPIO character device needs Linux (%w): %w", core.ErrNotSupported, errors.ErrUnsupported)

// Paths lists no chips off Linux.
func Paths() []string { return nil }

// Output is a requested output line; off Linux none can be requested.
type Output struct{}

// RequestOutput fails off Linux with an error matching errors.ErrUnsupported.
func RequestOutput(req core.Request, initial bool) (*Output, error) { return nil, errNotLinux }

// Offset returns the line's offset.
func (o *Output) Offset() int { return 0 }

// Set fails off Linux.
func (o *Output) Set(active bool) error { return errNotLinux }

// Close fails off Linux.
func (o *Output) Close() error { return errNotLinux }

// Watcher reads edge events; off Linux none can be created.
type Watcher struct{}

// Watch fails off Linux with an error matching errors.ErrUnsupported.
func Watch(reqs []core.Request) (*Watcher, error) { return nil, errNotLinux }

// Offsets returns nil off Linux.
func (w *Watcher) Offsets() []int { return nil }

// Dropped returns 0 off Linux.
func (w *Watcher) Dropped() uint64 { return 0 }

// ReadEdges fails off Linux.
func (w *Watcher) ReadEdges(ctx context.Context, dst []core.Edge) (int, error) {
	return 0, errNotLinux
}

// Close fails off Linux.
func (w *Watcher) Close() error { return errNotLinux }

// Chips lists no chips off Linux.
func Chips() []core.ChipInfo { return nil }
