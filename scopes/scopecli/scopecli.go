// Package scopecli is the logic behind "hilrig scope": identify an
// instrument, run a delay measurement and print its statistics, reset
// statistics, or run the SCPI scope simulator standalone.
package scopecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
	"github.com/hilrig/hilrig/scopes/sigrok"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig scope <idn|measure|reset|sim> [flags]

  idn      print the instrument's identity
  measure  configure a delay measurement, reset, wait --duration (reading the statistics
           along the way: a reset by another client fails it), print statistics
  reset    reset the delay statistics (configures the measurement first)
  sim      run the SCPI scope simulator on --listen until interrupted

common flags: --driver tek|keysight|rigol|siglent|sigrok --addr HOST[:PORT] [--vxi11] [--timeout 5s]
measure flags: --src 1 --dst 2 --src-edge rising --dst-edge rising [--threshold V] [--limit N] [--duration 1s]
sigrok: --addr is the sigrok driver spec (fx2lafw, demo); --samplerate Hz --samples N
sim flags: --listen 127.0.0.1:0 --dialect tek|keysight|rigol|siglent [--vxi11] --period 1ms --delay 50us --jitter 5us
           [--ch1 sim:rack/MARK_TX --ch2 sim:rack/MARK_RX] (feed both channels from GPIO lines instead)
`

// Run executes one "hilrig scope" invocation. It blocks until done (sim:
// until ctx ends) and writes results to stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := cli.Set{Prog: "hilrig scope", Usage: usage}
	for _, name := range []string{"idn", "measure", "reset", "sim"} {
		set.Commands = append(set.Commands, cli.Command{Name: name,
			Run: func(ctx context.Context, rest []string, stdout, stderr io.Writer) error {
				return runSub(ctx, name, rest, stdout, stderr)
			}})
	}
	return set.Run(ctx, args, stdout, stderr)
}

// runSub runs one sub-command; they share one flag set.
func runSub(ctx context.Context, sub string, rest []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig scope "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	driver := fs.String("driver", "", "tek, keysight, rigol, siglent or sigrok")
	addr := fs.String("addr", "", "HOST[:PORT] (sigrok: driver spec)")
	vxi := fs.Bool("vxi11", false, "use VXI-11 instead of a raw socket")
	timeout := fs.Duration("timeout", 5*time.Second, "per-command timeout")
	src := fs.Int("src", 1, "source channel")
	dst := fs.Int("dst", 2, "destination channel")
	srcEdge := fs.String("src-edge", "rising", "source edge: rising|falling")
	dstEdge := fs.String("dst-edge", "rising", "destination edge: rising|falling")
	threshold := fs.Float64("threshold", 0, "edge threshold in volts (unset: instrument default)")
	limit := fs.Int("limit", 0, "population limit (0: instrument default)")
	duration := fs.Duration("duration", time.Second, "measure: how long to accumulate")
	rate := fs.Int64("samplerate", 1_000_000, "sigrok sample rate in Hz")
	samples := fs.Int64("samples", 1_000_000, "sigrok samples per capture")
	listen := fs.String("listen", "127.0.0.1:0", "sim: listen address")
	dialect := fs.String("dialect", "tek", "sim: tek|keysight|rigol|siglent")
	period := fs.Duration("period", time.Millisecond, "sim: marker pulse period")
	delay := fs.Duration("delay", 50*time.Microsecond, "sim: receiver delay")
	jitter := fs.Duration("jitter", 5*time.Microsecond, "sim: receiver delay jitter")
	ch1 := fs.String("ch1", "", "sim: feed CH1 from a GPIO line (CHIP/LINE, e.g. sim:rack/MARK_TX) instead of the pulse generator")
	ch2 := fs.String("ch2", "", "sim: feed CH2 from a GPIO line (CHIP/LINE)")
	if err := fs.Parse(rest); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	if sub == "sim" {
		var d scopesim.Dialect
		if err := d.UnmarshalText([]byte(*dialect)); err != nil {
			return fmt.Errorf("%w: --dialect: %w", ErrUsage, err)
		}
		return runSim(ctx, stdout, d, *listen, *vxi, *period, *delay, *jitter, *ch1, *ch2)
	}
	if *driver == "" || *addr == "" {
		return fmt.Errorf("%w: --driver and --addr are required", ErrUsage)
	}
	cfg := scopes.DelayConfig{Source: *src, Dest: *dst, PopulationLimit: *limit}
	if err := cfg.SourceEdge.UnmarshalText([]byte(*srcEdge)); err != nil {
		return fmt.Errorf("%w: --src-edge: %w", ErrUsage, err)
	}
	if err := cfg.DestEdge.UnmarshalText([]byte(*dstEdge)); err != nil {
		return fmt.Errorf("%w: --dst-edge: %w", ErrUsage, err)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "threshold" {
			cfg.ThresholdV, cfg.HasThreshold = *threshold, true
		}
	})
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}

	var sc scopes.Scope
	var closer func() error
	if strings.EqualFold(*driver, "sigrok") {
		a, err := sigrok.New(sigrok.Config{Driver: *addr, SampleRateHz: *rate, Samples: *samples})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		sc, closer = a, a.Close
	} else {
		inst, err := lxi.Open(ctx, lxi.Options{Driver: *driver, Addr: *addr, VXI11: *vxi, Timeout: *timeout})
		if err != nil {
			if errors.Is(err, scopes.ErrBadConfig) {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			return err
		}
		sc, closer = inst, inst.Close
	}
	defer closer()

	switch sub {
	case "idn":
		id, err := sc.Identify(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, id.Raw)
		return nil
	case "reset":
		if err := sc.ConfigureDelay(ctx, cfg); err != nil {
			return err
		}
		if err := sc.ResetStats(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "statistics reset")
		return nil
	}
	if err := sc.ConfigureDelay(ctx, cfg); err != nil {
		return err
	}
	if err := sc.ResetStats(ctx); err != nil {
		return err
	}
	// A shared scope's other client may reset the statistics meanwhile:
	// read them along the way and refuse the measurement when they went
	// back (the pulses are free-running, so the count should also keep
	// pace with the time).
	watch := scopes.ResetWatch{Continuous: true}
	if _, isSigrok := sc.(*sigrok.Analyzer); !isSigrok {
		if err := poll(ctx, sc, *duration, &watch); err != nil {
			return err
		}
	}
	st, err := sc.ReadStats(ctx)
	if err != nil && !errors.Is(err, scopes.ErrNoResult) {
		return err
	}
	if werr := watch.Observe(st); werr != nil {
		return fmt.Errorf("measure: %w", werr)
	}
	fmt.Fprintf(stdout, "delay CH%d %v -> CH%d %v\n", cfg.Source, cfg.SourceEdge, cfg.Dest, cfg.DestEdge)
	fmt.Fprintf(stdout, "mean   %v\nmin    %v\nmax    %v\nstddev %v\ncount  %v\n", st.Mean, st.Min, st.Max, st.StdDev, st.Count)
	// What was measured beside what was asked: on a slow link the reset
	// and the read each take seconds, and the figures cover more.
	fmt.Fprintf(stdout, "covers %s (asked --duration %v)\n", st.Coverage(), *duration)
	if m := st.Missing(); len(m) > 0 {
		fmt.Fprintf(stdout, "missing (not reported by the instrument): %s\n", strings.Join(m, ", "))
	}
	// No result (the instrument's no-result value, or nothing counted) is
	// a failure: the caller must not take "missing" for a measurement.
	return err
}

// poll reads sc's statistics every fifth of d (at least 100 ms, at most
// 2 s) until d has passed since the call, feeding w; it returns the first
// reset w sees, or a read error other than "no result yet". Blocks.
func poll(ctx context.Context, sc scopes.Scope, d time.Duration, w *scopes.ResetWatch) error {
	every := min(max(d/5, 100*time.Millisecond), 2*time.Second)
	end := time.Now().Add(d)
	for {
		wait := min(every, time.Until(end))
		t := time.NewTimer(max(wait, 0))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		if !time.Now().Before(end) {
			return nil
		}
		st, err := sc.ReadStats(ctx)
		switch {
		case errors.Is(err, scopes.ErrNoResult):
		case err != nil:
			return err
		default:
			if err := w.Observe(st); err != nil {
				return fmt.Errorf("measure: %w", err)
			}
		}
	}
}

func runSim(ctx context.Context, stdout io.Writer, d scopesim.Dialect, listen string, vxi bool, period, delay, jitter time.Duration, ch1, ch2 string) error {
	chans := map[int]scopesim.EdgeSource{}
	what := ""
	switch {
	case ch1 != "" || ch2 != "":
		if ch1 == "" || ch2 == "" {
			return fmt.Errorf("%w: --ch1 and --ch2 go together", ErrUsage)
		}
		for i, text := range []string{ch1, ch2} {
			spec, err := gpio.ParseLineSpec(text)
			if err != nil {
				return fmt.Errorf("%w: --ch%d: %w", ErrUsage, i+1, err)
			}
			src, err := scopesim.WatchGPIO(ctx, spec)
			if err != nil {
				return err
			}
			defer src.Close()
			chans[i+1] = src
		}
		what = fmt.Sprintf("CH1 %s, CH2 %s", ch1, ch2)
	default:
		if period <= 0 || delay < 0 || jitter < 0 {
			return fmt.Errorf("%w: --period must be > 0, --delay and --jitter >= 0", ErrUsage)
		}
		g := scopesim.NewPulseGen(period, delay, jitter)
		chans[1], chans[2] = g.Sender(), g.Receiver()
		what = fmt.Sprintf("CH1 sender, CH2 receiver (delay %v + jitter < %v)", delay, jitter)
	}
	srv, err := scopesim.Start(ctx, scopesim.Config{Dialect: d, Listen: listen, Channels: chans, VXI11: vxi})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scope simulator (%s) listening on %s; %s\n", d, srv.Addr(), what)
	if vxi {
		fmt.Fprintf(stdout, "VXI-11 portmapper on %s (use --vxi11 --addr %s)\n", srv.PortmapperAddr(), srv.PortmapperAddr())
	}
	<-ctx.Done()
	return srv.Close()
}
