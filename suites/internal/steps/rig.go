// Package steps are the measuring steps the suites compose: open the rig,
// run a flow of a transport (intra, shm copy, shm loan, udp) and turn it
// into a report case with its method and bounds, the round-trip
// measurement, the wake-up floor, the scope cross-check and PTP gating.
//
// Steps block, take a context first, and return errors; they never assert
// (only specs do). Flows of every transport (intra, shm, udp with
// batching) run through rig.
package steps

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// RigContext is one suite's opened rig plus what the steps learned while
// using it (agents started, for failure diagnostics). Safe for concurrent
// use.
type RigContext struct {
	*harness.TestContext
	Rig *rig.Rig

	mu     sync.Mutex
	agents map[string]*rig.Agent
	seq    atomic.Uint32
	binary string
}

// OpenRig opens the rack of tc (namespaces, veth links, sim GPIO chips,
// the scope simulator of a sim scope). The caller registers
// DeferCleanup(rc.Close) right after. Blocks for the ip(8) calls (and for
// building hilrig when tc.Binary is empty).
func OpenRig(ctx context.Context, tc *harness.TestContext) (*RigContext, error) {
	bin := tc.Binary // built by harness.RunSuite before the specs
	if bin == "" {
		var err error
		if bin, err = deploy.Build(ctx, deploy.BuildOptions{}); err != nil {
			return nil, fmt.Errorf("build hilrig for the agents: %w", err)
		}
	}
	r, err := rig.Open(ctx, tc.Rack, &rig.Options{Logger: tc.Log, Binary: bin})
	if err != nil {
		return nil, err
	}
	return &RigContext{TestContext: tc, Rig: r, agents: map[string]*rig.Agent{}, binary: bin}, nil
}

// Close tears the rig down (idempotent).
func (rc *RigContext) Close() error { return rc.Rig.Close() }

// Binary is the hilrig binary the local and netns agents run.
func (rc *RigContext) Binary() string { return rc.binary }

// Agent returns (starting it on first use) the agent on board.
func (rc *RigContext) Agent(ctx context.Context, board string) (*rig.Agent, error) {
	a, err := rc.Rig.Agent(ctx, board)
	if err != nil {
		return nil, err
	}
	rc.mu.Lock()
	rc.agents[board] = a
	rc.mu.Unlock()
	return a, nil
}

// name returns a fresh flow name: unique in the rig, valid as a topic and
// endpoint id.
func (rc *RigContext) name(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, rc.seq.Add(1))
}

// Diagnostics describes the agents this suite used: where they run,
// every error they reported outside an endpoint and the tail of their
// stderr (the rig keeps the last 64 KiB). Registered by specs with
// DeferCleanup after the rig's cleanup, so it runs first, only on failure.
func (rc *RigContext) Diagnostics() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var names []string
	for n := range rc.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "rig domain %s, rack %s\n", rc.Rig.Domain, rc.Rack.Name)
	for _, n := range names {
		a := rc.agents[n]
		fmt.Fprintf(&b, "board %s: %s, agent %q\n", n, a.Where(), a.Hello.Agent)
		for _, e := range a.Errors() {
			fmt.Fprintf(&b, "  agent error: %v\n", &e)
		}
		if err := a.Dead(); err != nil {
			fmt.Fprintf(&b, "  agent ended: %v\n", err)
		}
		if tail := strings.TrimSpace(a.Stderr()); tail != "" {
			const keep = 4 << 10 // the end is where a crash says why
			if len(tail) > keep {
				tail = "…" + tail[len(tail)-keep:]
			}
			fmt.Fprintf(&b, "  stderr (tail):\n    %s\n", strings.ReplaceAll(tail, "\n", "\n    "))
		}
	}
	if segs, err := os.ReadDir("/dev/shm"); err == nil {
		n := 0
		for _, s := range segs {
			if strings.Contains(s.Name(), rc.Rig.Domain) {
				n++
			}
		}
		fmt.Fprintf(&b, "shm segments of the rig's domain in /dev/shm: %d\n", n)
	}
	return b.String()
}

// linkFor returns the first rack link of transport ("shm" or "udp").
func linkFor(rack *fixtures.Rack, transport string) (*fixtures.Link, error) {
	for i := range rack.Links {
		if rack.Links[i].Transport == transport {
			return &rack.Links[i], nil
		}
	}
	return nil, fmt.Errorf("%w: rack %s has no %s link", ErrNoLink, rack.Name, transport)
}
