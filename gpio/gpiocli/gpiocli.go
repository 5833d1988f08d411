// Package gpiocli implements `hilrig gpio`: ls (chips and lines with their
// consumers, like gpioinfo), mark (drive a marker for scope set-up and
// wiring checks), watch (print captured edges with timestamps, like
// gpiomon) and sim (create, remove, pull and fault-switch simulated chips).
package gpiocli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/internal/kind"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig gpio <command> [flags]

  ls                         list GPIO chips (real and simulated) and their lines
  mark  --chip C --line L    drive a marker: --rate HZ, --count N, --mode toggle|pulse:5us|every:4
  watch --chip C --line L... print edges with timestamps: --clock, --count N, --buffer N
  sim   create|rm|pull|fault simulated chips of the sim rack

Chips: gpiochipN, /dev/gpiochipN, a chip label, or sim:NAME. Lines: offset or name.`

// Run runs one `hilrig gpio` command. It blocks until the command ends or
// ctx is cancelled (mark and watch run until then unless --count is given).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Set{Prog: "hilrig gpio", Usage: usage, Commands: []cli.Command{
		{Name: "ls", Run: runLs},
		{Name: "mark", Run: runMark},
		{Name: "watch", Run: runWatch},
		{Name: "sim", Run: runSim},
	}}.Run(ctx, args, stdout, stderr)
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hilrig gpio "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%s: %w: %w", fs.Name(), ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q: %w", fs.Name(), fs.Arg(0), ErrUsage)
	}
	return nil
}

func usageErr(fs *flag.FlagSet, format string, a ...any) error {
	return fmt.Errorf("%s: %s: %w", fs.Name(), fmt.Sprintf(format, a...), ErrUsage)
}

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ls", stderr)
	all := fs.Bool("all", true, "list every line (false: only lines in use)")
	if err := parse(fs, args); err != nil {
		return err
	}
	chips, err := gpio.Chips(ctx)
	if err != nil {
		return err
	}
	if len(chips) == 0 {
		fmt.Fprintln(stdout, "no GPIO chips (no /dev/gpiochip*, no simulated chips in "+gpiosim.Dir("")+")")
		return nil
	}
	for _, c := range chips {
		fmt.Fprintf(stdout, "%s [%s] (%d lines) %s\n", c.Name, c.Label, len(c.Lines), c.Path)
		for _, l := range c.Lines {
			if !*all && !l.Used {
				continue
			}
			fmt.Fprintf(stdout, "\tline %3d: %-16s %s\n", l.Offset, quoteOr(l.Name, "unnamed"), describe(l))
		}
	}
	return nil
}

func quoteOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return strconv.Quote(s)
}

func describe(l gpio.LineInfo) string {
	if !l.Used {
		return "unused"
	}
	parts := []string{quoteOr(l.Consumer, "kernel"), "input"}
	if l.Output {
		parts[1] = "output"
	}
	if l.ActiveLow {
		parts = append(parts, "active-low")
	}
	if l.Drive != gpio.DrivePushPull {
		parts = append(parts, l.Drive.String())
	}
	return strings.Join(parts, " ")
}

// lineFlags collects repeated --line values.
type lineFlags []string

// String implements flag.Value.
func (l *lineFlags) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value; it appends, so --line may repeat.
func (l *lineFlags) Set(s string) error { *l = append(*l, strings.Split(s, ",")...); return nil }

func runMark(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mark", stderr)
	chip := fs.String("chip", "", "chip: gpiochipN, /dev/gpiochipN, label or sim:NAME (required)")
	line := fs.String("line", "", "line offset or name (required)")
	rate := fs.Float64("rate", 10, "marks per second (0 = as fast as possible)")
	count := fs.Int64("count", 0, "marks to make, then stop (0 = until interrupted)")
	modeS := fs.String("mode", "toggle", "marker mode: toggle, pulse:WIDTH, every:K, pulse:WIDTH,every:K")
	activeLow := fs.Bool("active-low", false, "active level is low")
	driveS := fs.String("drive", "push-pull", "push-pull, open-drain or open-source")
	consumer := fs.String("consumer", "hilrig-mark", "consumer label shown to other users")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *chip == "" || *line == "" {
		return usageErr(fs, "--chip and --line are required")
	}
	if *rate < 0 || math.IsNaN(*rate) || math.IsInf(*rate, 0) {
		return usageErr(fs, "--rate %v: want a finite rate >= 0", *rate)
	}
	mode, err := gpio.ParseMode(*modeS)
	if err != nil {
		return usageErr(fs, "--mode: %v", err)
	}
	var drive gpio.Drive
	if err := drive.UnmarshalText([]byte(*driveS)); err != nil {
		return usageErr(fs, "--drive: %v", err)
	}
	spec := gpio.LineSpec{Chip: kind.Chip(*chip), Line: *line, ActiveLow: *activeLow, Drive: drive, Consumer: *consumer}
	if err := spec.Validate(); err != nil {
		return usageErr(fs, "%v", err)
	}
	m, err := gpio.Open(ctx, spec, mode)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(stdout, "marking %s mode %s at %g/s (Ctrl-C to stop)\n", spec, mode, *rate)
	var period time.Duration
	if *rate > 0 {
		period = time.Duration(float64(time.Second) / *rate)
	}
	start := time.Now()
	next := start
	var n int64
	for *count == 0 || n < *count {
		if period > 0 {
			// Absolute schedule: a late mark does not shift the ones after it.
			next = next.Add(period)
			t := time.NewTimer(time.Until(next))
			select {
			case <-ctx.Done():
				t.Stop()
				return report(stdout, m, start)
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			break
		}
		if err := m.Mark(); err != nil {
			return err
		}
		n++
	}
	return report(stdout, m, start)
}

func report(w io.Writer, m *gpio.Output, start time.Time) error {
	el := time.Since(start)
	_, err := fmt.Fprintf(w, "%d marks, %d edges in %v (%.1f marks/s)\n", m.Marks(), m.Edges(), el.Round(time.Millisecond), float64(m.Marks())/el.Seconds())
	return err
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("watch", stderr)
	chip := fs.String("chip", "", "chip: gpiochipN, /dev/gpiochipN, label or sim:NAME (required)")
	var lines lineFlags
	fs.Var(&lines, "line", "line offset or name; repeat or comma-separate for several (required)")
	clockS := fs.String("clock", "monotonic", "event clock: monotonic, realtime or hte")
	count := fs.Int64("count", 0, "edges to print, then stop (0 = until interrupted)")
	buffer := fs.Int("buffer", 0, "event buffer size in edges (0 = default)")
	activeLow := fs.Bool("active-low", false, "lines are active low")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *chip == "" || len(lines) == 0 {
		return usageErr(fs, "--chip and at least one --line are required")
	}
	var clock gpio.Clock
	if err := clock.UnmarshalText([]byte(*clockS)); err != nil {
		return usageErr(fs, "--clock: %v", err)
	}
	specs := make([]gpio.LineSpec, len(lines))
	for i, l := range lines {
		specs[i] = gpio.LineSpec{Chip: kind.Chip(*chip), Line: l, ActiveLow: *activeLow, Consumer: "hilrig-watch"}
		if err := specs[i].Validate(); err != nil {
			return usageErr(fs, "%v", err)
		}
	}
	w, err := gpio.WatchWith(ctx, &gpio.WatchOptions{Clock: clock, EventBufferSize: *buffer}, specs...)
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(stderr, "watching %s lines %v (%s clock; Ctrl-C to stop)\n", *chip, w.Offsets(), clock)
	buf := make([]gpio.Edge, 64)
	var printed int64
	for *count == 0 || printed < *count {
		n, err := w.ReadEdges(ctx, buf)
		if err != nil && !errors.Is(err, gpio.ErrOverflow) {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		if err != nil {
			// Say so in the output stream, where the gap is.
			fmt.Fprintf(stdout, "# %v\n", err)
		}
		for _, e := range buf[:n] {
			if *count != 0 && printed >= *count {
				break
			}
			fmt.Fprintln(stdout, e.String())
			printed++
		}
	}
	if d := w.Dropped(); d > 0 {
		fmt.Fprintf(stderr, "%d edges dropped in total\n", d)
	}
	return nil
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const simUsage = `usage: hilrig gpio sim create NAME [--lines N] [--names a,b,...] [--ring N] [--label L]
       hilrig gpio sim rm NAME
       hilrig gpio sim pull NAME --line N --level 0|1
       hilrig gpio sim fault NAME [--on missing,permission,kernel-too-old,tiny-buffer] [--off ...] [--busy LINE=CONSUMER] [--free LINE]`
	if len(args) < 2 {
		fmt.Fprintln(stderr, simUsage)
		return fmt.Errorf("gpio sim: want a sub-command and a chip name: %w", ErrUsage)
	}
	sub, name, rest := args[0], args[1], args[2:]
	switch sub {
	case "create":
		fs := newFlags("sim create", stderr)
		lines := fs.Int("lines", 8, "number of lines")
		names := fs.String("names", "", "comma-separated line names by offset")
		ring := fs.Int("ring", gpiosim.DefaultRingSize, "edges kept per line (power of two)")
		label := fs.String("label", "", "chip label")
		if err := parse(fs, rest); err != nil {
			return err
		}
		cfg := gpiosim.Config{Lines: *lines, RingSize: *ring, Label: *label}
		if *names != "" {
			cfg.LineNames = strings.Split(*names, ",")
		}
		c, err := gpiosim.Create(name, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created sim:%s (%d lines) at %s\n", name, c.Lines(), c.Path())
		return c.Close()
	case "rm":
		c, err := gpiosim.Open(name)
		if err != nil {
			return err
		}
		return c.Remove()
	case "pull":
		fs := newFlags("sim pull", stderr)
		line := fs.Int("line", -1, "line offset")
		level := fs.Int("level", 1, "level: 0 or 1")
		if err := parse(fs, rest); err != nil {
			return err
		}
		if *level != 0 && *level != 1 {
			return usageErr(fs, "--level %d: want 0 or 1", *level)
		}
		c, err := gpiosim.Open(name)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Pull(*line, *level == 1)
	case "fault":
		fs := newFlags("sim fault", stderr)
		on := fs.String("on", "", "fault switches to turn on")
		off := fs.String("off", "", "fault switches to turn off")
		busy := fs.String("busy", "", "LINE=CONSUMER: make a line look held")
		free := fs.Int("free", -1, "line to free from a --busy phantom holder")
		if err := parse(fs, rest); err != nil {
			return err
		}
		// OpenRaw: a chip whose "missing" or "permission" switch is on
		// refuses ordinary opens; the fault command must still reach it.
		c, err := gpiosim.OpenRaw("", name)
		if err != nil {
			return err
		}
		defer c.Close()
		for _, set := range []struct {
			list string
			on   bool
		}{{*on, true}, {*off, false}} {
			if set.list == "" {
				continue
			}
			for _, f := range strings.Split(set.list, ",") {
				fl, ok := faultNames[strings.TrimSpace(f)]
				if !ok {
					return usageErr(fs, "unknown fault %q (want missing, permission, kernel-too-old, tiny-buffer)", f)
				}
				c.SetFault(fl, set.on)
			}
		}
		if *busy != "" {
			l, consumer, ok := strings.Cut(*busy, "=")
			n, err := strconv.Atoi(l)
			if !ok || err != nil || consumer == "" {
				return usageErr(fs, "--busy %q: want LINE=CONSUMER", *busy)
			}
			if err := c.SetLineBusy(n, consumer); err != nil {
				return err
			}
		}
		if *free >= 0 {
			if err := c.SetLineBusy(*free, ""); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%s faults: %s\n", gpio.SimChip(name), c.Faults())
		return nil
	}
	fmt.Fprintln(stderr, simUsage)
	return fmt.Errorf("gpio sim: unknown sub-command %q: %w", sub, ErrUsage)
}

var faultNames = map[string]gpiosim.Fault{
	"missing":        gpiosim.FaultMissing,
	"permission":     gpiosim.FaultPermission,
	"kernel-too-old": gpiosim.FaultKernelTooOld,
	"tiny-buffer":    gpiosim.FaultTinyBuffer,
}
