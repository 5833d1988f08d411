// Package steps are the measuring steps the suites compose: open the rig,
// run a flow of a transport (intra, shm copy, shm loan, udp) and turn it
// into a report case with its method and bounds, the round-trip
// measurement, the wake-up floor, the scope cross-check and PTP gating.
//
// Steps are free functions over an [Env] (data only: the suite's context,
// its rig and its labels). They block, take a context first, return
// errors and a finished [report.Case] (built in one place, case.go, and
// finalized); they never assert (only specs do). [Setup] is the one
// helper that registers Ginkgo nodes: the suites' shared BeforeAll. Flows
// of every transport (intra, shm, udp with batching) run through rig.
package steps

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// Env is what the steps run on: one suite's static context, the rig it
// opened and the labels its cases carry. Data only and not changed after
// Open, so safe for concurrent use; what the rig learns while running
// (agents started) the rig keeps.
type Env struct {
	*harness.TestContext
	Rig *rig.Rig
	// Labels are the suite's labels, stamped on every case a step returns.
	Labels []string
}

// Open opens the rack of tc (namespaces, veth links, sim GPIO chips, the
// scope simulator of a sim scope) under the run's rack lease
// (tc.RackLease: failing with lease.ErrHeld naming the holder when another
// run keeps it past tc.LeaseWait; the rig's Close releases it) and makes sure the agents' binary
// exists (tc.Binary, built by harness.RunSuite; else built now, so no
// step's deadline pays for a cold build). The caller registers
// DeferCleanup(env.Rig.Close) right after. Blocks for the ip(8) calls and
// the build.
func Open(ctx context.Context, tc *harness.TestContext, labels ...string) (*Env, error) {
	r, err := rig.Open(ctx, tc.Rack, &rig.Options{Logger: tc.Log, Binary: tc.Binary, ConsoleDir: tc.RunDir, Lease: tc.RackLease()})
	if err != nil {
		return nil, err
	}
	if _, err := r.Binary(ctx); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("build hilrig for the agents: %w", err)
	}
	return &Env{TestContext: tc, Rig: r, Labels: labels}, nil
}

// Diagnostics describes the agents env's rig started: where they run,
// every error they reported outside an endpoint and the tail of their
// stderr (the rig keeps the last 64 KiB). Setup registers it to run, only
// on failure, before the rig's cleanup.
func Diagnostics(env *Env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rig domain %s, rack %s\n", env.Rig.Domain, env.Rack.Name)
	for _, a := range env.Rig.Agents() {
		fmt.Fprintf(&b, "board %s: %s, agent %q\n", a.Board.Name, a.Where(), a.Hello.Agent)
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
	b.WriteString(env.Rig.ConsoleReport(40))
	if segs, err := os.ReadDir("/dev/shm"); err == nil {
		n := 0
		for _, s := range segs {
			if strings.Contains(s.Name(), env.Rig.Domain) {
				n++
			}
		}
		fmt.Fprintf(&b, "shm segments of the rig's domain in /dev/shm: %d\n", n)
	}
	return b.String()
}

// Path is one transport of the suites' sweeps with its send path: shm is
// measured sending by copy (Publisher.Send) and on loan (zero copy).
type Path struct {
	Transport fixtures.Transport
	Send      agentproto.SendPath
	// Middleware is the bus: "" (hilrig's own) or a peer (docs/peers.md),
	// run by the peer agent the harness built.
	Middleware string
}

// On returns p on middleware mw ("" or "hilrig": hilrig's own).
func (p Path) On(mw string) Path {
	if mw == agentproto.MiddlewareHilrig {
		mw = ""
	}
	p.Middleware = mw
	return p
}

// MiddlewareName is p's middleware as reports name it.
func (p Path) MiddlewareName() kind.Middleware { return kind.Middleware(p.Middleware).Name() }

// The paths the suites sweep.
var (
	Intra   = Path{Transport: fixtures.Intra}
	ShmCopy = Path{Transport: fixtures.Shm}
	ShmLoan = Path{Transport: fixtures.Shm, Send: agentproto.SendLoan}
	UDP     = Path{Transport: fixtures.UDP}
)

// AllTransports in report order.
var AllTransports = []Path{Intra, ShmCopy, ShmLoan, UDP}

// String names p in case names and reports: "intra", "shm-copy",
// "shm-loan", "udp".
func (p Path) String() string {
	if p.Transport == fixtures.Shm {
		if p.Send == agentproto.SendLoan {
			return "shm-loan"
		}
		return "shm-copy"
	}
	return string(p.Transport)
}

// Route says where p's flow runs on rack: publisher board, subscriber
// board and (shm/udp) the link. Intra runs on the first board, and so do
// both ends of fastdds-shm (the link's A board).
func Route(rack *fixtures.Rack, p Path) (from, to, link string, err error) {
	switch p.Transport {
	case fixtures.Intra:
		b := rack.Boards[0].Name
		return b, b, "", nil
	case fixtures.Shm, fixtures.UDP:
		l, err := linkFor(rack, p.Transport)
		if err != nil {
			return "", "", "", err
		}
		if p.Middleware == FastDDSSHM && p.Transport == fixtures.Shm {
			// Fast DDS's SHM transport matches only participants it takes
			// for one host (peerRouteNote): both ends on the link's A board.
			return l.A, l.A, l.Name, nil
		}
		return l.A, l.B, l.Name, nil
	}
	return "", "", "", fmt.Errorf("steps: transport %q: want one of %v", p, AllTransports)
}

// linkFor returns the first rack link of transport.
func linkFor(rack *fixtures.Rack, transport fixtures.Transport) (*fixtures.Link, error) {
	for i := range rack.Links {
		if rack.Links[i].Transport == transport {
			return &rack.Links[i], nil
		}
	}
	return nil, fmt.Errorf("%w: rack %s has no %s link", ErrNoLink, rack.Name, transport)
}
