// Command hilrig is the one binary of the rig: the agent that runs on boards
// (hilrig agent) and the tools for humans (shm, bench, gpio, ptp, scope,
// report, vm, rack, power, console, ros2, mcap).
//
// main only dispatches (internal/cli): each sub-command's logic, flags and
// usage live in its area's command package (gpio/gpiocli, timesync/ptpcli,
// scopes/scopecli, report/reportcli, vmboard/vmcli, middleware/shmtool,
// bench, ros2/ros2cli, recording/mcap/mcapcli, agent), which all wrap the
// one cli.ErrUsage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hilrig/hilrig/gpio/gpiocli"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/middleware/shmtool"
	"github.com/hilrig/hilrig/recording/mcap/mcapcli"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig/console/consolecli"
	"github.com/hilrig/hilrig/rig/lease/leasecli"
	"github.com/hilrig/hilrig/rig/power/powercli"
	"github.com/hilrig/hilrig/ros2/ros2cli"
	"github.com/hilrig/hilrig/scopes/scopecli"
	"github.com/hilrig/hilrig/timesync/ptpcli"
	"github.com/hilrig/hilrig/vmboard/vmcli"
)

func commands() cli.Set {
	return cli.Set{Prog: "hilrig", Commands: []cli.Command{
		{Name: "agent", Summary: "run the board agent (line-delimited JSON on stdin/stdout)", Run: runAgent},
		{Name: "bench", Summary: "benchmarks: pingpong, throughput (with baselines in the same run)", Run: runBench},
		{Name: "bridge", Summary: "forward topics between hilrig's bus and a ROS 2 graph (runs in hilrig-peer)", Run: runBridge},
		{Name: "console", Summary: "follow a board's serial console (captured, stamped, flagged)", Run: consolecli.Run},
		{Name: "gpio", Summary: "GPIO: ls, mark, watch", Run: gpiocli.Run},
		{Name: "mcap", Summary: "MCAP recordings: info, cat, recover", Run: mcapcli.Run},
		{Name: "power", Summary: "board power: on, off, cycle, status", Run: powercli.Run},
		{Name: "ptp", Summary: "PTP status from ptp4l: status, watch", Run: ptpcli.Run},
		{Name: "rack", Summary: "rack lease: status, lease, release", Run: leasecli.Run},
		{Name: "report", Summary: "reports: html, compare, import, trend (results store)", Run: runReport},
		{Name: "ros2", Summary: "ROS 2 messages: msg show, encode, decode (XCDR1)", Run: ros2cli.Run},
		{Name: "scope", Summary: "oscilloscope / logic analyzer: idn, measure, reset", Run: scopecli.Run},
		{Name: "shm", Summary: "shared-memory segments: ls, clean", Run: shmtool.Run},
		{Name: "version", Summary: "print the version", Run: func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintln(stdout, Version())
			return err
		}},
		{Name: "vm", Summary: "virtual boards (QEMU): build, run", Run: vmcli.Run},
	}}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit status: 0 done, 1 failed, 2 command-line mistake
// (cli.ErrUsage), 3 a report comparison found a regression.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := commands().Run(ctx, args, stdout, stderr)
	if err == nil {
		return 0
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "hilrig %s: %v\n", args[0], err)
	} else {
		fmt.Fprintf(stderr, "hilrig: %v\n", err)
	}
	if errors.Is(err, report.ErrRegression) {
		return 3
	}
	return cli.ExitCode(err)
}
