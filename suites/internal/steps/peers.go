package steps

import (
	"errors"
	"fmt"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// FastDDSSHM is the Fast DDS middleware on its shared-memory transport.
// Route runs both its ends on one board (see Route).
const FastDDSSHM = "fastdds-shm"

// PeerPaths are the peer middlewares the suites measure beside hilrig, in
// report order, each on the transport class it runs in: the
// shared-memory peers beside hilrig's shm copy path, the UDP peers beside
// hilrig's UDP (between the boards of the rack's UDP link, over its veth
// addresses). docs/peers.md says what each really uses.
var PeerPaths = []Path{
	ShmCopy.On("iceoryx"),
	ShmCopy.On(FastDDSSHM),
	UDP.On("cyclonedds"),
	UDP.On("fastdds-udp"),
}

// Beside returns, per path of classes, that path on hilrig followed by
// every peer of PeerPaths in its transport class: the runs a comparison
// sweeps, hilrig first so its case is there to compare with. Peers have
// no intra-process or loan path, so Intra and ShmLoan get hilrig only.
func Beside(classes ...Path) []Path {
	var out []Path
	for _, c := range classes {
		out = append(out, c)
		if c.Transport == fixtures.Intra || c.Send == agentproto.SendLoan {
			continue
		}
		for _, p := range PeerPaths {
			if p.Transport == c.Transport {
				out = append(out, p)
			}
		}
	}
	return out
}

// Rep names run rep (1-based) of a comparison cell that runs every
// middleware reps times: the case name report.RepName(name, rep) and its
// repetition index, or name unchanged and 0 when the cell runs once (so
// its cases keep their names and history in the results store). Callers
// loop repetitions outside middlewares — A B C A B C …, not A A A B B B —
// so a drift of the shared machine over the cell lands on every
// middleware alike, and set the case's Repetition to the index.
func Rep(name string, rep, reps int) (string, int) {
	if reps <= 1 {
		return name, 0
	}
	return report.RepName(name, rep), rep
}

// IsPeer reports whether p runs on a peer middleware.
func (p Path) IsPeer() bool { return p.Middleware != "" }

// Named prefixes a case name with p's middleware when p is a peer ("iceoryx
// shm-copy …"); hilrig's names are unchanged, so its cases keep their
// history in the results store.
func (p Path) Named(name string) string {
	if !p.IsPeer() {
		return name
	}
	return p.Middleware + " " + name
}

// PeerUnjudged is the note of a peer case: reported beside hilrig's, not
// judged against the rack's bounds (which are hilrig's).
const PeerUnjudged = "peer case: reported beside hilrig's, not judged against the rack's bounds"

// AsPeerCase drops the rack's bounds and checks from c when it ran on a
// peer middleware, and says so in its notes; hilrig's cases are left
// alone. Failure (loss under reliable QoS, a dead agent) stays.
func AsPeerCase(c *report.Case) *report.Case {
	if c == nil || c.Middleware == "" || c.Middleware == agentproto.MiddlewareHilrig {
		return c
	}
	c.Add(report.Addition{By: "steps.AsPeerCase", Unjudged: true, Notes: []string{PeerUnjudged}})
	c.Finalize()
	return c
}

// NotOnRack reports whether err means the step cannot run on this rack
// (no link of its transport, or a peer that cannot take the route): the
// spec skips with err's text instead of failing.
func NotOnRack(err error) bool {
	return errors.Is(err, ErrNoLink) || errors.Is(err, rig.ErrPeerRoute)
}

// peerRouteNote explains where a peer flow's ends run when Route placed
// them on one board.
func peerRouteNote(p Path, from, to string) string {
	if p.Middleware != FastDDSSHM || from != to {
		return ""
	}
	return fmt.Sprintf("fastdds-shm: publisher and subscriber on one board (%s), in its one agent process: Fast DDS 2.9's SHM locators carry a host id taken from the network interfaces, so boards in different network namespaces never match over SHM; intraprocess delivery is off, so every sample crosses the SHM transport as between processes", from)
}

// Unrunnable says why specs on p's middleware do not run here — a peer
// not installed (the reason names what is missing) or not in
// ginkgo.config's middlewares — or "" when they do. Specs Skip with it.
func Unrunnable(tc *harness.TestContext, p Path) string {
	if !p.IsPeer() {
		return ""
	}
	return tc.MiddlewareSkip(p.Middleware)
}

// ROS2Paths are the DDS peers a ROS 2 topic (fixtures.ROS2Topic) is
// measured on, over the rack's UDP link as two ROS 2 nodes on two hosts
// would talk: Cyclone DDS and Fast DDS, whose rmw layers are ROS 2's
// Tier-1 middlewares.
var ROS2Paths = []Path{UDP.On("cyclonedds"), UDP.On("fastdds-udp")}
