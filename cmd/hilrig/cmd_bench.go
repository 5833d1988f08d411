package main

import (
	"context"
	"io"
	"os"

	"github.com/hilrig/hilrig/middleware/bench"
)

// runBench is the "hilrig bench" sub-command: pingpong, throughput and
// ddsperf benchmarks with their baselines in the same run. The logic lives
// in middleware/bench; the other end of a two-process run re-executes this
// binary as "hilrig bench pong|sink <spec>".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return bench.Main(ctx, bench.Launcher{}, args, os.Stdin, stdout, stderr)
}
