package harness

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/rig"
)

// HealthTimeout bounds the health gate every suite runs before its specs
// (opening the rig, starting one agent per board, checking the claims).
const HealthTimeout = 3 * time.Minute

// BoardHealth is what the health check learned about one board.
type BoardHealth struct {
	// Name is the rack board; Where where its agent runs.
	Name, Where string
	// Agent is the build the agent reported (its hello); Kernel uname -r.
	Agent, Kernel string
	// Err is why the board is unhealthy (nil: reachable, right build,
	// answering as itself).
	Err error
}

// AgentVersion returns the build string of the hilrig binary bin (its
// `version` sub-command), which every agent must report in its hello.
// Blocks for the exec.
func AgentVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s version: %w", ErrHealth, bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckBoards starts (or reuses) the agent of every board of r's rack and
// checks that it is reachable, answers as that board and runs build want
// (from [AgentVersion]). It returns one entry per board, in rack order;
// the error joins every board's failure (wrapping ErrHealth) or is nil.
// The preflight suite records the entries; every suite's health gate
// fails on the error. Blocks (agent start-up, SSH deployment).
func CheckBoards(ctx context.Context, r *rig.Rig, want string) ([]BoardHealth, error) {
	var out []BoardHealth
	var errs []error
	for _, b := range r.Rack.Boards {
		h := BoardHealth{Name: b.Name}
		a, err := r.Agent(ctx, b.Name)
		switch {
		case err != nil:
			h.Err = fmt.Errorf("%w: board %s (%s) unreachable: %w", ErrHealth, b.Name, b.Reach, err)
		default:
			h.Where, h.Agent, h.Kernel = a.Where(), a.Hello.Agent, a.Hello.Kernel
			if a.Hello.Board != b.Name {
				h.Err = fmt.Errorf("%w: agent on %s answers as board %q, want %s", ErrHealth, a.Where(), a.Hello.Board, b.Name)
			} else if want != "" && a.Hello.Agent != want {
				h.Err = fmt.Errorf("%w: board %s (%s) runs hilrig build %q, the controller's is %q", ErrHealth, b.Name, a.Where(), a.Hello.Agent, want)
			}
		}
		if h.Err != nil {
			errs = append(errs, h.Err)
		}
		out = append(out, h)
	}
	return out, errors.Join(errs...)
}

// CheckHealth is the cheap part of preflight, shared by the preflight
// suite and every suite's health gate: every board reachable and running
// the controller's build ([CheckBoards]) and every capability the rack
// claims working ([rig.Rig.CheckClaims]: a broken claim is an error, so
// specs needing it fail instead of skipping). bin is the hilrig binary
// the agents run. Returns nil when healthy, else an error wrapping
// ErrHealth that names every failure. Blocks.
func CheckHealth(ctx context.Context, r *rig.Rig, bin string) error {
	want, err := AgentVersion(ctx, bin)
	if err != nil {
		return err
	}
	_, berr := CheckBoards(ctx, r, want)
	var cerr error
	if err := r.CheckClaims(ctx); err != nil {
		cerr = fmt.Errorf("%w: rack %s claims %v: %w", ErrHealth, r.Rack.Name, r.Rack.Capabilities, err)
	}
	return errors.Join(berr, cerr)
}

// healthGate opens the rack, runs [CheckHealth] and tears the rig down
// again. It is the first function of the SynchronizedBeforeSuite that
// [RunSuite] registers, so it runs once per suite binary (on Ginkgo
// process 1) before any spec measures: a suite never measures on an
// unhealthy rack, whatever order `ginkgo -r` runs the suites in.
func healthGate(ctx context.Context, tc *TestContext) error {
	r, err := rig.Open(ctx, tc.Rack, &rig.Options{Logger: tc.Log, Binary: tc.Binary, Lease: tc.RackLease()})
	if err != nil {
		return fmt.Errorf("%w: open rack %s: %w", ErrHealth, tc.Rack.Name, err)
	}
	herr := CheckHealth(ctx, r, tc.Binary)
	if herr == nil {
		herr = r.CheckPeers(ctx, tc.Middlewares)
	}
	if herr != nil {
		var diag strings.Builder
		for _, b := range r.Rack.Boards {
			if a, err := r.Agent(ctx, b.Name); err == nil {
				if s := strings.TrimSpace(a.Stderr()); s != "" {
					fmt.Fprintf(&diag, "\nboard %s agent stderr (tail):\n%s", b.Name, s)
				}
			}
		}
		herr = fmt.Errorf("%w%s", herr, diag.String())
	}
	return errors.Join(herr, r.Close())
}

// registerHealthGate registers the suite's SynchronizedBeforeSuite: the
// health gate on process 1, nothing on the others (they wait for it).
func registerHealthGate(tc *TestContext) {
	ginkgo.SynchronizedBeforeSuite(func(ctx ginkgo.SpecContext) []byte {
		if err := healthGate(ctx, tc); err != nil {
			ginkgo.Fail(fmt.Sprintf("hilrig %s: the rack is not healthy, nothing is measured: %v", tc.Suite, err))
		}
		return nil
	}, func(ginkgo.SpecContext, []byte) {}, ginkgo.NodeTimeout(HealthTimeout))
}
