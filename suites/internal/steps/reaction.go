package steps

import (
	"context"
	"fmt"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/report"
)

// DUTPlacement is where env's rig put the rack's shared things, as the
// dut runner needs them: the rig's middleware domain, its sim chips and
// namespaces.
func DUTPlacement(env *Env) dut.Placement {
	return dut.Placement{Domain: env.Rig.Domain, Chip: env.Rig.Chip, Netns: env.Rig.NetnsName}
}

// StartDUT starts the rack's dut name on its board (dut.Start: built
// when the rack says build, its output in the run directory), with args
// appended to its command. The caller registers DeferCleanup(p.Stop)
// right after. Blocks for the build and the start.
func StartDUT(ctx context.Context, env *Env, name string, args ...string) (*dut.Program, error) {
	return dut.Start(ctx, env.Rack, name, DUTPlacement(env), &dut.Options{Args: args, OutputDir: env.RunDir, Logger: env.Log})
}

// Reaction feeds the program p its stimuli and returns the reaction case
// named name (dut.Measure, then Measurement.Case), filed under env's
// suite and labels, judged against the dut's bounds. Blocks for the run.
func Reaction(ctx context.Context, env *Env, p *dut.Program, name string, opts dut.MeasureOptions) (*report.Case, error) {
	m, err := dut.Measure(ctx, p.DUT, DUTPlacement(env), opts)
	if err != nil {
		return nil, fmt.Errorf("%w\ndut output:\n%s", err, p.Output())
	}
	return m.Case(dut.CaseInfo{Suite: env.Suite, Name: name, Labels: env.Labels, Program: p}), nil
}

// ReactionWithCrash is Reaction with the program killed (SIGKILL, as a
// crash) after stimulus at and restarted at once, while the stimuli go
// on at their rate: the stimuli of the outage are missed. The case is a
// fault window, not judged against the bounds (Unjudged): it carries the
// restart count, the misses and the program's output tail. Blocks for
// the run and the restart.
func ReactionWithCrash(ctx context.Context, env *Env, p *dut.Program, name string, at int) (*report.Case, error) {
	restarted := make(chan error, 1)
	injected := false // Between runs on this goroutine (Measure's)
	opts := dut.MeasureOptions{Between: func(i int) {
		if i != at {
			return
		}
		injected = true
		if err := p.Kill(); err != nil {
			restarted <- err
			return
		}
		// The restart runs beside the schedule, as a supervisor would.
		go func() {
			select {
			case <-p.Done():
				restarted <- p.Restart(ctx)
			case <-ctx.Done():
				restarted <- ctx.Err()
			}
		}()
	}}
	c, err := Reaction(ctx, env, p, name, opts)
	if err != nil {
		return nil, err
	}
	if !injected {
		return nil, fmt.Errorf("dut %s: the crash was never injected: fewer stimuli than %d", p.DUT.Name, at+1)
	}
	select {
	case rerr := <-restarted:
		if rerr != nil {
			return nil, fmt.Errorf("dut %s: restart after the crash: %w", p.DUT.Name, rerr)
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.Add(report.Addition{By: "steps.ReactionWithCrash", Unjudged: true, Notes: []string{
		fmt.Sprintf("fault window: the program was killed (SIGKILL) after stimulus %d and restarted (%d restart); the stimuli of the outage are missed, so the case is not judged against the bounds", at+1, p.Restarts()),
		"dut output (last lines, both runs):\n" + p.OutputTail(10),
	}})
	c.Finalize()
	return c, nil
}
