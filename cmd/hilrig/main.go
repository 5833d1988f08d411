// Command hilrig is the one binary of the rig: the agent that runs on boards
// (hilrig agent) and the tools for humans (shm, bench, gpio, ptp, scope,
// report, vm).
//
// Each sub-command lives in its own cmd_<name>.go file with the signature of
// [command]; main only dispatches, so areas of the rig can grow their
// commands without touching each other.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command runs one sub-command. args excludes the sub-command's own name.
// It returns errUsage (wrapped) for bad flags so main can exit 2.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// errRegression marks a successful run whose verdict is "worse" (exit status 3).
var errRegression = errors.New("regression")

func commands() map[string]command {
	return map[string]command{
		"agent":  {"run the board agent (line-delimited JSON on stdin/stdout)", runAgent},
		"bench":  {"benchmarks: pingpong, throughput (with baselines in the same run)", runBench},
		"shm":    {"shared-memory segments: ls, clean", runShm},
		"gpio":   {"GPIO: ls, mark, watch", runGPIO},
		"ptp":    {"PTP status from ptp4l: status, watch", runPTP},
		"scope":  {"oscilloscope / logic analyzer: idn, measure, reset", runScope},
		"report": {"reports: html, compare, import, trend (results store)", runReport},
		"vm":     {"virtual boards (QEMU): build, run", runVM},
		"version": {"print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintln(stdout, Version())
			return err
		}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hilrig <command> [flags]")
	fmt.Fprintln(w)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hilrig: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "hilrig %s: %v\n", args[0], err)
		switch {
		case errors.Is(err, errUsage):
			return 2
		case errors.Is(err, errRegression):
			return 3
		}
		return 1
	}
	return 0
}
