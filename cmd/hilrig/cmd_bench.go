package main

import (
	"context"
	"io"
	"os"

	"github.com/hilrig/hilrig/bench"
)

// runBench is the "hilrig bench" sub-command: pingpong, throughput and
// ddsperf benchmarks with their baselines in the same run. The logic lives
// in bench; the other end of a two-process run re-executes this
// binary as "hilrig bench pong|sink <spec>".
//
// `bench pingpong --transport cyclonedds|fastdds|iceoryx` runs in the peer
// agent binary (bench_peer.go): this one links no peer.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if peerArgs, tags, ok, err := peerPingPong(args); ok {
		if err != nil {
			return err
		}
		return runPeerBench(ctx, peerArgs, tags, stdout, stderr)
	}
	return bench.Main(ctx, bench.Launcher{}, args, os.Stdin, stdout, stderr)
}
