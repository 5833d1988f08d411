// Package consolecli is "hilrig console BOARD": follow a board's serial
// console live (stamped lines on stdout) while capturing it to a file.
package consolecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/rig/console"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig console [-config FILE | -rack FILE] [-out FILE] BOARD

Follows BOARD's console (its rack console: block) until interrupted: every
line on stdout with its CLOCK_MONOTONIC and wall stamps, panic/oops/
watchdog/OOM lines flagged, and the same lines captured to -out
(default console-BOARD.log).`

// Run runs "hilrig console" with args. Blocks until ctx ends (Ctrl-C) or
// the device goes away.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "ginkgo.config naming the rack")
	rackFile := fs.String("rack", "", "rack fixture file (instead of -config)")
	out := fs.String("out", "", "capture file (default console-BOARD.log)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("%w: want one BOARD, got %q", ErrUsage, fs.Args())
	}
	var r *fixtures.Rack
	var err error
	if *rackFile != "" {
		r, err = fixtures.LoadRack(*rackFile)
	} else {
		_, r, err = fixtures.Load(*config)
	}
	if err != nil {
		return err
	}
	b, err := r.Board(fs.Arg(0))
	if err != nil {
		return err
	}
	if b.Console == nil {
		return fmt.Errorf("%w: board %s has no console block", fixtures.ErrNotFound, b.Name)
	}
	path := *out
	if path == "" {
		path = "console-" + b.Name + ".log"
	}
	c, err := console.Open(b.Name, *b.Console, path)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(stderr, "hilrig console: %s on %s, captured to %s (Ctrl-C ends)\n", b.Name, b.Console.Device, path)
	err = c.Follow(ctx, stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
