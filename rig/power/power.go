// Package power switches boards' power through the driver of their rack
// `power:` block: command (argv lists on the controller), gpio-relay (a
// relay on a controller GPIO line, through package gpio, sim chips
// included), http (NETIO JSON API, Tasmota and Shelly Gen1 HTTP) and vm
// (a vm board's QEMU process, through its owner: [NewVM]).
//
// A Switch is safe for concurrent use (operations are serialised). Every
// operation blocks until the driver answered, bounded by ctx and the
// block's timeout; Cycle also holds the power off for off_time.
package power

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/safefile"
)

// ErrPower marks a failed power operation (the driver refused or did not
// answer); the error names the board, the driver and the operation.
var ErrPower = errors.New("power")

// State of a board's power.
type State int

// States; Unknown when the driver cannot read it back (a command driver
// without status, a relay this process has not driven).
const (
	Unknown State = iota
	On
	Off
)

func (s State) String() string {
	switch s {
	case On:
		return "on"
	case Off:
		return "off"
	}
	return "unknown"
}

// driver is one power driver.
type driver interface {
	set(ctx context.Context, on bool) error
	status(ctx context.Context) (State, error)
	close() error
}

// cycler is a driver with its own cycle operation (command's cycle argv).
type cycler interface {
	cycle(ctx context.Context) error
}

// Switch is one board's power control.
type Switch struct {
	Board string
	cfg   fixtures.Power
	mu    sync.Mutex
	drv   driver
}

// New returns the switch of board b of rack r (relative paths in the
// power block are relative to the rack file). It fails, naming the board,
// when b has no power block or its driver cannot be set up here.
func New(r *fixtures.Rack, b *fixtures.Board) (*Switch, error) {
	cfg, err := b.PowerFor()
	if err != nil {
		return nil, err
	}
	s := &Switch{Board: b.Name, cfg: cfg}
	switch cfg.Driver {
	case fixtures.PowerCommand:
		s.drv = &command{cfg: cfg}
	case fixtures.PowerGPIORelay:
		s.drv = &relay{line: *cfg.Relay}
	case fixtures.PowerHTTP:
		pw := ""
		if cfg.PasswordFile != "" {
			raw, err := safefile.ReadPrivate(r.RelPath(cfg.PasswordFile), maxPasswordFile, passwordFileLimit)
			if err != nil {
				return nil, fmt.Errorf("%w: board %s: power.password_file: %w", ErrPower, b.Name, err)
			}
			pw = strings.TrimRight(string(raw), "\r\n")
		}
		s.drv = newHTTP(cfg, pw)
	case fixtures.PowerVM:
		// Not the rig running it (that one uses NewVM with itself as the
		// owner): drive the QEMU process it published.
		s.drv = &vmDriver{cfg: cfg, owner: publishedOwner{rack: r.Name, board: b.Name}}
	default:
		return nil, fmt.Errorf("%w: board %s: power driver %q is not available to this controller", ErrPower, b.Name, cfg.Driver)
	}
	return s, nil
}

// maxPasswordFile bounds an http driver's password_file: a password, not
// a stream (/dev/zero is refused as a device before any read).
const (
	maxPasswordFile   = 4 << 10
	passwordFileLimit = "the 4 KiB limit for password files"
)

// Config is the power block the switch uses (with defaults).
func (s *Switch) Config() fixtures.Power { return s.cfg }

func (s *Switch) op(ctx context.Context, name string, f func(ctx context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout+s.cfg.OffTime)
	defer cancel()
	if err := f(ctx); err != nil {
		return fmt.Errorf("%w: board %s: %s %s: %w", ErrPower, s.Board, s.cfg.Driver, name, err)
	}
	return nil
}

// On switches the board's power on.
func (s *Switch) On(ctx context.Context) error {
	return s.op(ctx, "on", func(ctx context.Context) error { return s.drv.set(ctx, true) })
}

// Off switches the board's power off.
func (s *Switch) Off(ctx context.Context) error {
	return s.op(ctx, "off", func(ctx context.Context) error { return s.drv.set(ctx, false) })
}

// Cycle switches the power off, holds it off for off_time, and on again
// (or runs the command driver's cycle argv).
func (s *Switch) Cycle(ctx context.Context) error {
	return s.op(ctx, "cycle", func(ctx context.Context) error {
		if c, ok := s.drv.(cycler); ok {
			return c.cycle(ctx)
		}
		if err := s.drv.set(ctx, false); err != nil {
			return err
		}
		// The off time is what the hardware needs to reset (capacitors
		// drain), not synchronisation: a timer bounded by ctx.
		if err := sleepCtx(ctx, s.cfg.OffTime); err != nil {
			return fmt.Errorf("holding the power off: %w", err)
		}
		return s.drv.set(ctx, true)
	})
}

// Status reads the board's power state back from the driver.
func (s *Switch) Status(ctx context.Context) (State, error) {
	var st State
	err := s.op(ctx, "status", func(ctx context.Context) error {
		var err error
		st, err = s.drv.status(ctx)
		return err
	})
	return st, err
}

// Close releases what the driver holds (a relay's GPIO line).
func (s *Switch) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drv.close()
}
