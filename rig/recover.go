package rig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/power"
)

// Power returns board's power switch (its rack power: block). A vm
// board's vm driver drives the QEMU process this rig runs for it: off is
// QMP quit, cycle QMP system_reset, on a fresh boot with its agent. It
// fails, naming the board, when the board has no power block. The caller
// closes the switch.
func (r *Rig) Power(board string) (*power.Switch, error) {
	b, err := r.Rack.Board(board)
	if err != nil {
		return nil, err
	}
	cfg, err := b.PowerFor()
	if err != nil {
		return nil, err
	}
	if cfg.Driver == fixtures.PowerVM {
		return power.NewVM(board, cfg, vmOwner{r: r, board: board})
	}
	return power.New(r.Rack, b)
}

// vmOwner is power.VMOwner over the rig's vm board.
type vmOwner struct {
	r     *Rig
	board string
}

func (o vmOwner) Running() power.VM {
	if p := o.r.vmRunning(o.board); p != nil {
		return p
	}
	return nil
}

// Boot starts the board with a fresh agent (the old one, whose QEMU
// ended, is forgotten).
func (o vmOwner) Boot(ctx context.Context) error {
	_, err := o.r.RestartAgent(ctx, o.board)
	return err
}

// RecoverBoard brings a lost board back: it power-cycles it through its
// power: block, waits for it (its agent is redeployed and says hello;
// retried every second until ctx ends, for a board still booting) and
// returns the fresh agent. The old agent is killed first (a hung agent
// that still held its process). Endpoints are not restarted: the caller
// restarts those it needs ([Rig.RestartEndpoint], [Agent.Start]).
// Errors name the board and the cause. Blocks, bounded by ctx.
func (r *Rig) RecoverBoard(ctx context.Context, board string) (*Agent, error) {
	sw, err := r.Power(board)
	if err != nil {
		return nil, fmt.Errorf("rig: recover board %s: %w", board, err)
	}
	defer sw.Close()
	isVM := sw.Config().Driver == fixtures.PowerVM
	if !isVM {
		// The agent process belongs to this controller: end it before the
		// power goes (its output must end for the rig to forget it).
		r.mu.Lock()
		old := r.agents[board]
		delete(r.agents, board)
		r.mu.Unlock()
		if old != nil {
			if err := old.Kill(ctx); err != nil {
				return nil, fmt.Errorf("rig: recover board %s: %w", board, err)
			}
		}
	}
	if err := sw.Cycle(ctx); err != nil {
		return nil, fmt.Errorf("rig: recover board %s: %w", board, err)
	}
	var a *Agent
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		if isVM {
			a, err = r.Agent(ctx, board) // the cycle booted it
		} else {
			a, err = r.RestartAgent(ctx, board)
		}
		if err == nil {
			r.opts.Logger.Info("board recovered", "board", board, "driver", sw.Config().Driver)
			return a, nil
		}
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rig: recover board %s: waiting for its agent after the power cycle: %w", board, errors.Join(err, ctx.Err()))
		case <-retry.C:
		}
	}
}
