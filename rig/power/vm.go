package power

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/fixtures"
)

// VM is a vm board's running QEMU process as the vm driver drives it
// (package vmboard's *Board plus its owner's reaping).
type VM interface {
	// QMP runs one QMP command and returns its "return" value. Blocks
	// until QEMU answers or ctx ends.
	QMP(ctx context.Context, command string) (json.RawMessage, error)
	// Kill ends QEMU at once (SIGKILL); it does not block.
	Kill()
	// Exited is closed once QEMU has exited and been reaped.
	Exited() <-chan struct{}
}

// VMOwner is what owns a vm board's QEMU process (the rig): the vm
// driver's power is that process.
type VMOwner interface {
	// Running returns the board's QEMU process (nil when none runs:
	// power off).
	Running() VM
	// Boot starts the board (a new QEMU process; power on). Blocks
	// until QEMU runs, bounded by ctx.
	Boot(ctx context.Context) error
}

// vmQuitWait bounds how long off and cycle wait for QEMU to act on
// "quit" or "system_reset" (QMP answered, process gone) before killing
// it: a SIGSTOPped or wedged QEMU answers nothing.
func vmQuitWait(cfg fixtures.Power) time.Duration { return max(cfg.Timeout/4, time.Second) }

// NewVM returns the switch of vm board board whose QEMU process owner
// runs: off is QMP quit, cycle QMP system_reset (QEMU runs with
// -no-reboot, so a reset ends the process) then a fresh boot, on a boot;
// when QMP does not answer within a quarter of the timeout (at least
// 1 s) the process is killed. Status is QMP query-status ("running",
// "paused", ... are on; no process is off).
func NewVM(board string, cfg fixtures.Power, owner VMOwner) (*Switch, error) {
	if cfg.Driver != fixtures.PowerVM {
		return nil, fmt.Errorf("%w: board %s: power driver %q is not vm", ErrPower, board, cfg.Driver)
	}
	if owner == nil {
		return nil, fmt.Errorf("%w: board %s: the vm driver needs the rig that runs the board's QEMU", ErrPower, board)
	}
	return &Switch{Board: board, cfg: cfg.Defaults(), drv: &vmDriver{cfg: cfg.Defaults(), owner: owner}}, nil
}

type vmDriver struct {
	cfg   fixtures.Power
	owner VMOwner
}

// end asks QEMU to act on command (quit, system_reset: either ends it)
// and waits for it to exit; past vmQuitWait it kills it. Then it waits
// for the reaping, bounded by ctx.
func (d *vmDriver) end(ctx context.Context, command string) error {
	vm := d.owner.Running()
	if vm == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, vmQuitWait(d.cfg))
	defer cancel()
	_, qerr := vm.QMP(wctx, command)
	if qerr == nil {
		select {
		case <-vm.Exited():
			return nil
		case <-wctx.Done():
		}
	}
	vm.Kill()
	select {
	case <-vm.Exited():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("QEMU did not exit after qmp %s (%v) and SIGKILL: %w", command, qerr, ctx.Err())
	}
}

func (d *vmDriver) set(ctx context.Context, on bool) error {
	if !on {
		return d.end(ctx, "quit")
	}
	if d.owner.Running() != nil {
		return nil
	}
	return d.owner.Boot(ctx)
}

func (d *vmDriver) cycle(ctx context.Context) error {
	if err := d.end(ctx, "system_reset"); err != nil {
		return err
	}
	return d.owner.Boot(ctx)
}

func (d *vmDriver) status(ctx context.Context) (State, error) {
	vm := d.owner.Running()
	if vm == nil {
		return Off, nil
	}
	select {
	case <-vm.Exited():
		return Off, nil
	default:
	}
	raw, err := vm.QMP(ctx, "query-status")
	if err != nil {
		return Unknown, err
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Unknown, fmt.Errorf("query-status: %w", err)
	}
	if s.Status == "shutdown" {
		return Off, nil
	}
	return On, nil
}

func (d *vmDriver) close() error { return nil }

var errNoVM = errors.New("a vm board's power is its QEMU process, owned by the rig that runs it (hilrig power runs it: see docs/lab-rack.md)")
