// Command hilrig-peer is the peer agent: `hilrig agent` with the peer
// middleware adapters (peers/…, cgo) linked in, so endpoints can run on
// Cyclone DDS, Fast DDS or iceoryx as well as on hilrig's own middleware;
// `bench pingpong --transport PEER`, the ping-pong comparison with
// hilrig in one invocation; and `bridge`, hilrig's bus ↔ a ROS 2 graph
// (ros2/bridge; `hilrig bridge` execs it). Which peers it has depends on its build tags:
//
//	go build -tags cyclonedds,fastdds,iceoryx ./cmd/hilrig-peer
//
// The default hilrig binary stays static and CGO-free; the deployer ships
// this one to boards whose rack entry claims a peer.
//
// Environment: HILRIG_DDS_DOMAIN is the DDS domain id (default 0);
// HILRIG_IOX_MAX_PAYLOAD sizes the RouDi this agent starts when none runs
// (default 1 MiB).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/peers/peerbench"
	"github.com/hilrig/hilrig/ros2/bridge"
)

// peers are the adapters this build has (peers_*.go, by build tag).
var peers = map[string]agent.PeerOpener{}

func version() string {
	v := "hilrig-peer (devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " " + s.Value
			}
		}
	}
	names := make([]string, 0, len(peers))
	for n := range peers {
		names = append(names, n)
	}
	slices.Sort(names)
	return v + " peers=" + strings.Join(names, ",")
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: hilrig-peer agent [-board NAME] | bench pingpong --transport PEER[,PEER] | bridge --config FILE [--dds PEER] | shm-clean SEGMENT... | version")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "agent":
		out := stdout
		if stdout == io.Writer(os.Stdout) {
			// The process's own stdout: the peers' libraries print to it
			// too (protocolStdout).
			p, perr := protocolStdout()
			if perr != nil {
				err = perr
				break
			}
			out = p
		}
		err = agent.MainWith(ctx, args[1:], os.Stdin, out, stderr, agent.Options{Build: version(), Peers: peers})
	case "bench":
		exe, xerr := os.Executable()
		if xerr != nil {
			err = xerr
			break
		}
		err = peerbench.Main(ctx, exe, args[1:], stdout, stderr)
	case "bridge":
		err = bridge.Main(ctx, args[1:], stdout, stderr, peers)
	case "shm-clean":
		err = shmClean(args[1:], stdout)
	case "version":
		fmt.Fprintln(stdout, version())
	default:
		fmt.Fprintf(stderr, "hilrig-peer: unknown command %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "hilrig-peer %s: %v\n", args[0], err)
		if errors.Is(err, agent.ErrUsage) || errors.Is(err, peerbench.ErrUsage) || errors.Is(err, bridge.ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}
