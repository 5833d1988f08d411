package steps

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/tracing"
)

// DUTPlacement is where env's rig put the rack's shared things, as the
// dut runner needs them: the rig's middleware domain, its sim chips and
// namespaces.
func DUTPlacement(env *Env) dut.Placement { return RigDUTPlacement(env.Rig) }

// RigDUTPlacement is where rig r put the rack's shared things (a suite
// that opens its rig itself, as the soak suite does).
func RigDUTPlacement(r *rig.Rig) dut.Placement {
	return dut.Placement{Domain: r.Domain, Chip: r.Chip, Netns: r.NetnsName}
}

// dutTraceKB is the trace buffer per CPU of a dut run: the snapshot is
// read after the run, and a loaded 2-core host fills the default 1 MiB
// in about a second.
const dutTraceKB = 4096

// ArmDUTTrace arms a kernel trace on the controller's host (every CPU,
// dutTraceKB per CPU) for a dut program on a local or netns board to mark
// into (tracing.Arm: root and tracefs, else an error saying which). The
// caller registers DeferCleanup(s.Close) right after.
func ArmDUTTrace() (*tracing.Session, error) {
	return tracing.Arm(tracing.Config{BufferKB: dutTraceKB})
}

// StartDUT starts the rack's dut name on its board (dut.Start: built
// when the rack says build, its output in the run directory), with args
// appended to its command; with tr, the program may mark into that trace
// (HILRIG_TRACE_MARKER). The caller registers DeferCleanup(p.Stop) right
// after. Blocks for the build and the start.
func StartDUT(ctx context.Context, env *Env, name string, tr *tracing.Session, args ...string) (*dut.Program, error) {
	o := &dut.Options{Args: args, OutputDir: env.RunDir, Logger: env.Log}
	if tr != nil {
		// Through the controller's root: `ip netns exec` mounts a sysfs
		// of the namespace's own over /sys, without tracefs under it.
		o.Env = []string{fmt.Sprintf("HILRIG_TRACE_MARKER=/proc/%d/root%s", os.Getpid(), tr.MarkerFile())}
	}
	return dut.Start(ctx, env.Rack, name, DUTPlacement(env), o)
}

// Reaction feeds the program p its stimuli and returns the reaction case
// named name (dut.Measure, then Measurement.Case), filed under env's
// suite and labels, with the program's CPU and resident set (started
// programs), judged against the dut's bounds; with tr, a failed
// case keeps the trace snapshot of its first miss. Blocks for the run.
func Reaction(ctx context.Context, env *Env, p *dut.Program, name string, opts dut.MeasureOptions, tr *tracing.Session) (*report.Case, error) {
	if !p.DUT.External {
		opts.Usage = p.Usage
	}
	m, err := dut.Measure(ctx, p.DUT, DUTPlacement(env), opts)
	if err != nil {
		return nil, fmt.Errorf("%w\ndut output:\n%s", err, p.Output())
	}
	return m.Case(dut.CaseInfo{Suite: env.Suite, Name: name, Labels: env.Labels, Program: p, Trace: tr, Route: DUTRoute(env.Rack, p.DUT)}), nil
}

// DUTRoute is the bus route of dut d's stimuli and responses, as
// rig.RouteOf decides it for a bus case: from the controller's board
// (the rack's first local board: the stimulus and response ends run in
// the controller) to d's board over shared memory (a hilrig topic with
// the automatic transport between two processes of one kernel). nil when
// a correlation port is a GPIO line or another middleware's topic, the
// rack has no local board, or d's board is on another kernel.
func DUTRoute(rack *fixtures.Rack, d *fixtures.DUT) *report.Route {
	for _, name := range []string{d.Correlation.Input, d.Correlation.Output} {
		if p, ok := d.Port(name); !ok || p.IsGPIO() || p.Middleware.OrDefault() != fixtures.PortHilrig {
			return nil
		}
	}
	for _, b := range rack.Boards {
		if b.Reach.Kind != fixtures.ReachLocal {
			continue
		}
		if !rack.SameKernel(b.Name, d.Board) {
			return nil
		}
		rt := rig.RouteOf(rack, fixtures.Shm, b.Name, d.Board)
		return &rt
	}
	return nil
}

// ReactionWithCrash is Reaction with the program supervised
// (Program.Supervise: restarted whenever it ends) and killed (SIGKILL, as
// a crash) after stimulus at, while the stimuli go on at their rate. The
// case counts the crash as a fault window (report.ExtraFaultWindows) and
// the misses in it (report.ExtraFaultWindowLost), carries the program's
// output tail at its death and is not judged against the bounds
// (Unjudged). Blocks for the run.
func ReactionWithCrash(ctx context.Context, env *Env, p *dut.Program, name string, at int) (*report.Case, error) {
	sup := p.Supervise(ctx)
	injected := false // Between runs on this goroutine (Measure's)
	var killErr error
	opts := dut.MeasureOptions{Usage: p.Usage, Between: func(i int) {
		if i == at {
			injected, killErr = true, p.Kill()
		}
	}}
	m, err := dut.Measure(ctx, p.DUT, DUTPlacement(env), opts)
	crashes := sup.Stop()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w\ndut output:\n%s", err, p.Output())
	case !injected:
		return nil, fmt.Errorf("dut %s: the crash was never injected: fewer stimuli than %d", p.DUT.Name, at+1)
	case killErr != nil:
		return nil, fmt.Errorf("dut %s: kill: %w", p.DUT.Name, killErr)
	case len(crashes) == 0:
		return nil, fmt.Errorf("dut %s: killed, but the supervisor saw no end", p.DUT.Name)
	}
	c := m.Case(dut.CaseInfo{Suite: env.Suite, Name: name, Labels: env.Labels, Program: p, Route: DUTRoute(env.Rack, p.DUT)})
	a := report.Addition{By: "steps.ReactionWithCrash", Unjudged: true, Extra: map[report.ExtraKey]float64{
		report.ExtraFaultWindows:    float64(len(crashes)),
		report.ExtraFaultWindowLost: float64(m.WindowMisses(crashes)),
	}}
	for _, cr := range crashes {
		if cr.RestartErr != "" {
			return nil, fmt.Errorf("dut %s: restart after %s: %s", p.DUT.Name, cr.Exit, cr.RestartErr)
		}
		a.Notes = append(a.Notes, fmt.Sprintf("fault window: the program ended (%s) after stimulus %d and was restarted in %s; its output then:\n%s",
			cr.Exit, at+1, time.Duration(cr.RestartedMono-cr.DiedMono), cr.Output))
	}
	a.Notes = append(a.Notes, fmt.Sprintf("%d stimuli missed in the fault window: a crash is a fault, so the case is not judged against the bounds", int64(a.Extra[report.ExtraFaultWindowLost])))
	c.Add(a)
	c.Finalize()
	return c, nil
}

// ReactionUnderMix is Reaction with ginkgo.config's traffic_mix running
// on the rack's links meanwhile (best effort, shm always, udp when the
// rack claims multi-host; intra is not run): how much of the program's
// reaction the bus load costs. The case is compared with idle (the same
// program's case without the mix; nil: no comparison) by its p50 and p99
// ratios and is not judged against the bounds (Unjudged), as the
// latency suite's loaded case. Blocks for the run and the flows' end.
func ReactionUnderMix(ctx context.Context, env *Env, p *dut.Program, name string, idle *report.Case) (*report.Case, error) {
	d := p.DUT
	// The flows outlast the stimuli: the probes, the schedule, the last
	// deadline and a second of margin.
	run := time.Duration(float64(d.Stimulus.Count)/d.Stimulus.RateHz*float64(time.Second)) + d.Correlation.Deadline + 3*time.Second
	var flows []*rig.Flow
	var notes []string
	for i, t := range env.Config.TrafficMix {
		link := ""
		for _, l := range env.Rack.Links {
			if l.Transport == t.Transport {
				link = l.Name
				break
			}
		}
		switch {
		case t.Transport == fixtures.Intra, link == "":
			notes = append(notes, fmt.Sprintf("traffic_mix[%d] %s: not run (no link of that transport)", i, t.Transport))
			continue
		case t.Transport == fixtures.UDP && !env.Rack.Claims(fixtures.CapMultiHost):
			notes = append(notes, fmt.Sprintf("traffic_mix[%d] udp: not run, rack %s does not claim multi-host", i, env.Rack.Name))
			continue
		}
		for k := range max(t.Count, 1) {
			f, err := env.Rig.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Name: fmt.Sprintf("dutmix%d-%d", i, k), Link: link,
				Payload: int(t.Payload), RateHz: t.RateHz, Duration: run, BestEffort: true}})
			if err != nil {
				return nil, fmt.Errorf("traffic_mix[%d] on %s: %w", i, link, err)
			}
			flows = append(flows, f)
			notes = append(notes, fmt.Sprintf("background: %s %s at %g Hz on %s", t.Transport, t.Payload, t.RateHz, link))
		}
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("%w: no traffic_mix flow can run on rack %s", ErrNoLink, env.Rack.Name)
	}
	c, err := Reaction(ctx, env, p, name, dut.MeasureOptions{}, nil)
	for _, f := range flows {
		if _, werr := f.Wait(ctx); werr != nil && err == nil {
			err = fmt.Errorf("background flow %s: %w", f.Spec.Name, werr)
		}
	}
	if err != nil {
		return nil, err
	}
	a := report.Addition{By: "steps.ReactionUnderMix", Unjudged: true, Notes: append(notes,
		"under the background traffic mix: compared with the idle case, not judged against the bounds")}
	if idle != nil && idle.Summary.P50 > 0 && idle.Summary.P99 > 0 {
		a.Extra = map[report.ExtraKey]float64{
			report.ExtraIdleP50: float64(idle.Summary.P50), report.ExtraIdleP99: float64(idle.Summary.P99),
			report.ExtraP50Ratio: float64(c.Summary.P50) / float64(idle.Summary.P50),
			report.ExtraP99Ratio: float64(c.Summary.P99) / float64(idle.Summary.P99),
		}
	}
	c.Add(a)
	c.Finalize()
	return c, nil
}
