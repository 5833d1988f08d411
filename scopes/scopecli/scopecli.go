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
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
	"github.com/hilrig/hilrig/scopes/sigrok"
)

// ErrUsage marks command-line mistakes; the caller maps it to exit status 2.
var ErrUsage = errors.New("usage")

const usage = `usage: hilrig scope <idn|measure|reset|sim> [flags]

  idn      print the instrument's identity
  measure  configure a delay measurement, reset, wait --duration, print statistics
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return fmt.Errorf("%w: missing sub-command", ErrUsage)
		}
		return nil
	}
	sub, rest := args[0], args[1:]
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
	if sub != "idn" && sub != "measure" && sub != "reset" {
		return fmt.Errorf("%w: unknown sub-command %q", ErrUsage, sub)
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
	if _, isSigrok := sc.(*sigrok.Analyzer); !isSigrok {
		t := time.NewTimer(*duration)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	st, err := sc.ReadStats(ctx)
	if err != nil && !errors.Is(err, scopes.ErrNoResult) {
		return err
	}
	fmt.Fprintf(stdout, "delay CH%d %v -> CH%d %v\n", cfg.Source, cfg.SourceEdge, cfg.Dest, cfg.DestEdge)
	fmt.Fprintf(stdout, "mean   %v\nmin    %v\nmax    %v\nstddev %v\ncount  %v\n", st.Mean, st.Min, st.Max, st.StdDev, st.Count)
	fmt.Fprintf(stdout, "covers %s\n", st.Coverage())
	if m := st.Missing(); len(m) > 0 {
		fmt.Fprintf(stdout, "missing (not reported by the instrument): %s\n", strings.Join(m, ", "))
	}
	// No result (the instrument's no-result value, or nothing counted) is
	// a failure: the caller must not take "missing" for a measurement.
	return err
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
