package rig

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hilrig/hilrig/agentproto"
)

// LoadSpec is a CPU load on one board (agentproto.Load), started next to a
// flow so the flow is measured with the board's CPUs taken.
type LoadSpec struct {
	// Name is the load endpoint's id; default "load<n>".
	Name string
	// Board runs the load.
	Board string
	// Threads is the number of busy threads; 0 = the board's CPU count as
	// its agent reported it (Hello.NumCPU: the CPUs the agent may run on).
	Threads int
	// CPUs pins thread i to CPUs[i % len(CPUs)]; empty = unpinned.
	CPUs []int
	// Kind is agentproto.LoadALU (default) or agentproto.LoadMem; MemMiB is
	// each thread's buffer for LoadMem.
	Kind   string
	MemMiB int
	// Duration ends the load by itself (a bound, so a controller that
	// never calls Stop cannot leave a board spinning for ever); 0 = until
	// Stop or the agent stops.
	Duration time.Duration
}

// Load is a running load.
type Load struct {
	Spec     LoadSpec
	Endpoint *Endpoint
}

// Load starts a load on spec.Board and returns once every load thread is
// running (the agent acknowledged). Blocks; on error nothing is left
// running.
func (r *Rig) Load(ctx context.Context, spec LoadSpec) (*Load, error) {
	if spec.Board == "" {
		return nil, fmt.Errorf("rig: load needs a board")
	}
	a, err := r.Agent(ctx, spec.Board)
	if err != nil {
		return nil, err
	}
	if spec.Threads == 0 {
		spec.Threads = a.Hello.NumCPU
		if spec.Threads <= 0 {
			return nil, fmt.Errorf("rig: load on %s: its agent reported no CPU count; give Threads", spec.Board)
		}
	}
	if spec.Name == "" {
		spec.Name = "load" + strconv.Itoa(int(r.flowSeq.Add(1)))
	}
	s := agentproto.Start{Endpoint: spec.Name, Role: agentproto.Load, DurationNs: int64(spec.Duration),
		Load: &agentproto.LoadSpec{Threads: spec.Threads, CPUs: spec.CPUs, Kind: spec.Kind, MemMiB: spec.MemMiB}}
	ep, err := a.Start(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("rig: load %s on %s: %w", spec.Name, spec.Board, err)
	}
	return &Load{Spec: spec, Endpoint: ep}, nil
}

// Stop ends the load and waits for its final, which carries the
// agentproto.LoadReport of what ran. A load already ended by its Duration
// just returns its final. Blocks; ctx bounds the wait.
func (l *Load) Stop(ctx context.Context) (*agentproto.Final, error) {
	select {
	case <-l.Endpoint.Done():
	default:
		if err := l.Endpoint.Stop(); err != nil {
			return nil, fmt.Errorf("rig: load %s: %w", l.Spec.Name, err)
		}
	}
	f, err := l.Endpoint.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("rig: load %s on %s: %w", l.Spec.Name, l.Spec.Board, err)
	}
	if f.Load == nil {
		return f, fmt.Errorf("%w: load %s on %s: final without a load report", ErrAgent, l.Spec.Name, l.Spec.Board)
	}
	return f, nil
}

// LoadShare is the share of its threads' cores a load actually got:
// consumed CPU time / (threads × wall time), 0..1 (0 without a report).
func LoadShare(f *agentproto.Final) float64 {
	if f == nil || f.Load == nil || f.Load.Threads <= 0 || f.Load.WallNs <= 0 {
		return 0
	}
	return float64(f.Load.CPUNs) / (float64(f.Load.Threads) * float64(f.Load.WallNs))
}
