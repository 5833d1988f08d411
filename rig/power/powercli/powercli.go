// Package powercli is "hilrig power on|off|cycle|status BOARD": a board's
// power through the driver of its rack power: block (package power).
package powercli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/rig/power"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig power on|off|cycle|status [-config FILE | -rack FILE] BOARD

Switches BOARD's power through the power: block of its rack (the rack named
by ginkgo.config: -config, $HILRIG_CONFIG or found walking up from the
current directory; or -rack FILE). cycle holds the power off for the
block's off_time. A gpio-relay line is released when the command exits.
A vm board's power is the QEMU process of the rig running it: status, off
(QMP quit) and cycle (QMP system_reset) drive it; on is the rig's.`

// Run runs "hilrig power" with args (without "power"). Blocks for the
// driver, bounded by ctx and the power block's timeout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	op := func(name, summary string) cli.Command {
		return cli.Command{Name: name, Summary: summary, Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return run(ctx, name, args, stdout, stderr)
		}}
	}
	return cli.Set{Prog: "hilrig power", Usage: usage, Commands: []cli.Command{
		op("on", "switch on"), op("off", "switch off"), op("cycle", "off, off_time, on"), op("status", "read back"),
	}}.Run(ctx, args, stdout, stderr)
}

func run(ctx context.Context, op string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig power "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "ginkgo.config naming the rack")
	rackFile := fs.String("rack", "", "rack fixture file (instead of -config)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("%w: want one BOARD, got %q", ErrUsage, fs.Args())
	}
	var do func(*power.Switch) error
	switch op {
	case "on":
		do = func(s *power.Switch) error { return s.On(ctx) }
	case "off":
		do = func(s *power.Switch) error { return s.Off(ctx) }
	case "cycle":
		do = func(s *power.Switch) error { return s.Cycle(ctx) }
	case "status":
		do = func(*power.Switch) error { return nil }
	default:
		return fmt.Errorf("%w: unknown operation %q (want on, off, cycle or status)", ErrUsage, op)
	}
	rack, err := LoadRack(*config, *rackFile)
	if err != nil {
		return err
	}
	b, err := rack.Board(fs.Arg(0))
	if err != nil {
		return err
	}
	s, err := power.New(rack, b)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := do(s); err != nil {
		return err
	}
	st, err := s.Status(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: power %s (%s)\n", b.Name, st, s.Config().Driver)
	return err
}

// LoadRack is the rack of rackFile, or else of the configuration
// (flag, $HILRIG_CONFIG, ginkgo.config above the working directory).
func LoadRack(config, rackFile string) (*fixtures.Rack, error) {
	if rackFile != "" {
		return fixtures.LoadRack(rackFile)
	}
	_, r, err := fixtures.Load(config)
	return r, err
}
