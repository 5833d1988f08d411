package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/rig"
)

// MinLoadShare is the smallest share of its cores a load must have
// consumed (CPU time / (threads × wall)) for the loaded figures to stand
// for "the board under load": a load the scheduler starved (a cgroup
// quota, a load that never ran) would make the loaded/idle ratio
// meaningless. Not higher: when another tenant competes for the cores
// (two CPU hogs on the 2-core CI VM gave the load 45–55 %), the board is
// loaded all the more, and the figures still stand.
const MinLoadShare = 0.2

// NoteLoadedUnbounded is the note on every loaded case: the rack's bounds
// profile states idle bounds only.
const NoteLoadedUnbounded = "latency under load: reported, not bounded; the rack states no loaded bounds"

// UnderLoad is one flow measured idle, then with a CPU load on the
// subscriber's board.
type UnderLoad struct {
	// Idle is the flow on a quiet board, judged against the rack's bounds
	// (MeasureJudged); Loaded is the same flow with the load running,
	// reported with Bounds nil.
	Idle, Loaded *Ran
	// Load is the load's final; Load.Load says what ran.
	Load *agentproto.Final
	// Board is where the load ran (the subscriber's board); Threads the
	// number of busy threads (the CPUs its agent may run on).
	Board   string
	Threads int
	// P50Ratio and P99Ratio are loaded / idle (0 when idle had no samples).
	P50Ratio, P99Ratio float64
	// Share is the share of its cores the load consumed (rig.LoadShare).
	Share float64
}

// MeasureUnderLoad measures the flow p twice: idle (MeasureJudged, named
// name+": idle"), then with one busy thread per CPU of the subscriber's
// board running from before the flow's first message to after its last
// (Measure, named name+": loaded"). The loaded case has Bounds nil and
// says so (NoteLoadedUnbounded); its Extra and notes carry the idle p50 and
// p99, the loaded/idle ratios and what the load ran. A load that ended
// before the flow, or got less than MinLoadShare of its cores, sets the
// loaded case's Failure: its figures do not show the board loaded. Blocks
// for both flows.
func MeasureUnderLoad(ctx context.Context, env *Env, name string, p Params) (*UnderLoad, error) {
	_, to, _, err := Route(env.Rack, p.Path)
	if err != nil {
		return nil, err
	}
	idle, err := MeasureJudged(ctx, env, name+": idle", p)
	if err != nil {
		return nil, fmt.Errorf("steps: %s idle: %w", name, err)
	}
	a, err := env.Rig.Agent(ctx, to)
	if err != nil {
		return nil, err
	}
	u := &UnderLoad{Idle: idle, Board: to, Threads: a.Hello.NumCPU}
	// The load's own duration is only a backstop (a spec that dies before
	// Stop cannot leave the board spinning): the flow's nominal time, its
	// drain and a minute of slack.
	backstop := time.Minute + max(p.Drain, 3*time.Second) + p.Duration
	if p.RateHz > 0 {
		backstop += time.Duration(float64(p.Count+p.WarmUp) / p.RateHz * float64(time.Second))
	}
	load, err := env.Rig.Load(ctx, rig.LoadSpec{Board: to, Threads: u.Threads, Duration: backstop})
	if err != nil {
		return u, fmt.Errorf("steps: %s: %w", name, err)
	}
	loaded, merr := Measure(ctx, env, name+": loaded", p)
	// Stopped with its own context: a cancelled spec still ends the load.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	fin, lerr := load.Stop(sctx)
	cancel()
	u.Loaded, u.Load = loaded, fin
	if err := errors.Join(merr, lerr); err != nil {
		return u, fmt.Errorf("steps: %s loaded: %w", name, err)
	}
	u.Share = rig.LoadShare(fin)
	annotateLoaded(u, env.Profile.Name, !p.BestEffort)
	return u, nil
}
