package power

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/vmboard"
)

// VM is a vm board's running QEMU process as the vm driver drives it
// (package vmboard's *Board plus its owner's reaping).
type VM interface {
	// QMP runs one QMP command and returns its "return" value. Blocks
	// until QEMU answers or ctx ends.
	QMP(ctx context.Context, command string) (json.RawMessage, error)
	// Kill ends QEMU at once (SIGKILL); it does not block.
	Kill()
	// WaitExit blocks until QEMU has exited and been reaped, or ctx ends.
	WaitExit(ctx context.Context) error
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
	if qerr == nil && vm.WaitExit(wctx) == nil {
		return nil
	}
	vm.Kill()
	if err := vm.WaitExit(ctx); err != nil {
		return fmt.Errorf("QEMU did not exit after qmp %s (%v) and SIGKILL: %w", command, qerr, err)
	}
	return nil
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

// Published is what a rig records of a vm board's running QEMU process,
// so that `hilrig power` in another process can drive it.
type Published struct {
	Socket string `json:"qmp"` // QMP socket
	PID    int    `json:"pid"` // QEMU's process id
	// RigPID is the controller running the board.
	RigPID int       `json:"rig_pid"`
	Since  time.Time `json:"since"`
}

// PublishedPath is where the record of rack's vm board board is kept:
// <tmp>/hilrig-power/<rack>/<board>.json.
func PublishedPath(rack, board string) string {
	return filepath.Join(os.TempDir(), "hilrig-power", rack, board+".json")
}

// Publish records p for rack's board and returns the function removing
// the record (only while it is still p's: a later boot replaces it).
func Publish(rack, board string, p Published) (unpublish func(), err error) {
	path := PublishedPath(rack, board)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%w: board %s: publish: %w", ErrPower, board, err)
	}
	raw, _ := json.Marshal(p)
	tmp := path + fmt.Sprintf(".%d.tmp", os.Getpid())
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return nil, fmt.Errorf("%w: board %s: publish: %w", ErrPower, board, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("%w: board %s: publish: %w", ErrPower, board, err)
	}
	return func() {
		if cur, err := os.ReadFile(path); err == nil && string(cur) == string(raw) {
			_ = os.Remove(path)
		}
	}, nil
}

// ErrNotOwner: a vm board can be booted only by the rig that runs it.
var ErrNotOwner = errors.New("a vm board is booted by the rig that runs it (a suite, or hilrig vm run); this process can reset, stop and read it back")

// publishedOwner drives the QEMU process a rig published.
type publishedOwner struct{ rack, board string }

func (o publishedOwner) Running() VM {
	raw, err := os.ReadFile(PublishedPath(o.rack, o.board))
	if err != nil {
		return nil
	}
	var p Published
	if json.Unmarshal(raw, &p) != nil || p.PID <= 0 || !alive(p.PID) {
		return nil
	}
	return publishedVM(p)
}

func (o publishedOwner) Boot(context.Context) error { return ErrNotOwner }

type publishedVM Published

func (p publishedVM) QMP(ctx context.Context, command string) (json.RawMessage, error) {
	return vmboard.QMPAt(ctx, p.Socket, command)
}

func (p publishedVM) Kill() { killPID(p.PID) }

// WaitExit polls the process (not our child: no wait status to block on).
func (p publishedVM) WaitExit(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for alive(p.PID) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
