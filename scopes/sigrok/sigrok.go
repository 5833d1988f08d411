// Package sigrok measures marker delays with a logic analyzer through
// Debian's sigrok-cli: it runs a capture for a driver/device at a sample
// rate, parses the VCD output into edges per channel and computes the same
// delay statistics a scope reports, plus the individual per-message
// delays. [Analyzer] implements [scopes.Scope] and [scopes.DelayFetcher].
//
// Works with cheap fx2lafw analyzers on a real rack ("fx2lafw") and with
// sigrok's built-in "demo" driver for tests. Install with
// `apt-get install sigrok-cli`.
package sigrok

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"

	"github.com/hilrig/hilrig/scopes"
)

// Config selects the analyzer and capture.
type Config struct {
	// Binary is the sigrok-cli path; default "sigrok-cli" from $PATH.
	Binary string
	// Driver is the sigrok driver spec, e.g. "fx2lafw" or "demo"
	// (may carry ":conn=..." options).
	Driver string
	// SampleRateHz is the sample rate; default 1 MHz. Delay resolution is
	// one sample period.
	SampleRateHz int64
	// Samples is the capture length in samples; required (a capture
	// started by ResetStats ends after this many samples).
	Samples int64
	// Channels maps the [scopes.DelayConfig] channel numbers to analyzer
	// channel names: channel n is Channels[n-1]. Default D0..D7.
	Channels []string
	// Logger receives debug traces; nil discards.
	Logger *slog.Logger
}

// Analyzer is a logic analyzer behind sigrok-cli. ResetStats starts a
// capture in the background; ReadStats waits for it to finish (bounded by
// ctx) and computes the statistics. Not safe for concurrent use.
type Analyzer struct {
	cfg    Config
	delay  *scopes.DelayConfig
	run    *capture
	delays []float64
}

type capture struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errb   bytes.Buffer
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

var _ scopes.Scope = (*Analyzer)(nil)
var (
	_ scopes.DelayFetcher  = (*Analyzer)(nil)
	_ scopes.DelayResolver = (*Analyzer)(nil)
)

// New checks cfg and returns an Analyzer; it does not start sigrok-cli.
func New(cfg Config) (*Analyzer, error) {
	if cfg.Binary == "" {
		cfg.Binary = "sigrok-cli"
	}
	if cfg.Driver == "" {
		return nil, fmt.Errorf("%w: sigrok Driver is empty", scopes.ErrBadConfig)
	}
	if cfg.SampleRateHz <= 0 {
		cfg.SampleRateHz = 1_000_000
	}
	if cfg.Samples <= 0 {
		return nil, fmt.Errorf("%w: sigrok Samples must be > 0", scopes.ErrBadConfig)
	}
	if len(cfg.Channels) == 0 {
		cfg.Channels = []string{"D0", "D1", "D2", "D3", "D4", "D5", "D6", "D7"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Analyzer{cfg: cfg}, nil
}

// Identify runs `sigrok-cli --version` and reports the driver as model.
func (a *Analyzer) Identify(ctx context.Context) (scopes.Identity, error) {
	out, err := exec.CommandContext(ctx, a.cfg.Binary, "--version").Output()
	if err != nil {
		return scopes.Identity{}, fmt.Errorf("sigrok identify: %s --version: %w", a.cfg.Binary, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return scopes.Identity{Vendor: "sigrok", Model: a.cfg.Driver, Firmware: strings.TrimSpace(first),
		Raw: "sigrok," + a.cfg.Driver + ",," + strings.TrimSpace(first)}, nil
}

// ConfigureDelay records the channels and edges; thresholds are fixed by
// the analyzer hardware, so HasThreshold returns [scopes.ErrNotSupported].
func (a *Analyzer) ConfigureDelay(_ context.Context, cfg scopes.DelayConfig) error {
	a.delay = nil
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Source > len(a.cfg.Channels) || cfg.Dest > len(a.cfg.Channels) {
		return fmt.Errorf("%w: channel %d/%d beyond the %d configured analyzer channels", scopes.ErrBadConfig,
			cfg.Source, cfg.Dest, len(a.cfg.Channels))
	}
	if cfg.HasThreshold {
		return fmt.Errorf("sigrok: logic threshold: %w", scopes.ErrNotSupported)
	}
	a.delay = &cfg
	return nil
}

// ResetStats discards the previous capture and starts a new one.
func (a *Analyzer) ResetStats(ctx context.Context) error {
	if a.delay == nil {
		return scopes.ErrNotConfigured
	}
	a.stop()
	a.delays = nil
	src, dst := a.cfg.Channels[a.delay.Source-1], a.cfg.Channels[a.delay.Dest-1]
	// The capture outlives this call, so it gets its own context; stop()
	// and ReadStats end it.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &capture{done: make(chan struct{}), cancel: cancel}
	c.cmd = exec.CommandContext(cctx, a.cfg.Binary, "--driver", a.cfg.Driver,
		"--config", fmt.Sprintf("samplerate=%d", a.cfg.SampleRateHz),
		"--samples", fmt.Sprint(a.cfg.Samples), "--channels", src+","+dst, "-O", "vcd")
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errb
	a.cfg.Logger.Debug("sigrok capture", "args", c.cmd.Args)
	if err := c.cmd.Start(); err != nil {
		cancel()
		return fmt.Errorf("sigrok: start %s: %w", a.cfg.Binary, err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	a.run = c
	return nil
}

func (a *Analyzer) stop() {
	if a.run != nil {
		a.run.cancel()
		<-a.run.done
		a.run = nil
	}
}

// ReadStats waits for the capture to finish, parses it and computes the
// delay statistics (population standard deviation).
func (a *Analyzer) ReadStats(ctx context.Context) (scopes.Stats, error) {
	if a.delay == nil {
		return scopes.Stats{}, scopes.ErrNotConfigured
	}
	if a.run != nil {
		c := a.run
		select {
		case <-c.done:
		case <-ctx.Done():
			return scopes.Stats{}, fmt.Errorf("sigrok: waiting for capture: %w", ctx.Err())
		}
		a.run = nil
		c.cancel()
		if c.err != nil {
			return scopes.Stats{}, fmt.Errorf("sigrok: %s: %w: %s", strings.Join(c.cmd.Args, " "), c.err, strings.TrimSpace(c.errb.String()))
		}
		cap, err := ParseVCD(&c.out)
		if err != nil {
			return scopes.Stats{}, fmt.Errorf("sigrok: %w", err)
		}
		a.delays = Delays(cap, a.cfg.Channels[a.delay.Source-1], a.cfg.Channels[a.delay.Dest-1], *a.delay)
	}
	return scopes.CaptureStats(a.delays, a.delay.PopulationLimit, "sigrok "+a.cfg.Driver)
}

// FetchDelays appends the per-message delays (seconds) of the last capture.
func (a *Analyzer) FetchDelays(_ context.Context, dst []float64) ([]float64, error) {
	if a.delay == nil {
		return dst, scopes.ErrNotConfigured
	}
	if a.run != nil {
		return dst, errors.New("sigrok: capture still running; call ReadStats first")
	}
	return append(dst, a.delays...), nil
}

// DelayResolution returns the sample interval (s) of the capture: every
// delay is a whole number of samples. No I/O.
func (a *Analyzer) DelayResolution() float64 { return 1 / float64(a.cfg.SampleRateHz) }

// Close stops a running capture and waits for sigrok-cli to exit.
func (a *Analyzer) Close() error { a.stop(); return nil }

// Delays pairs the edges of two capture channels per cfg's polarities and
// population limit and returns the delays in seconds.
func Delays(c *Capture, src, dst string, cfg scopes.DelayConfig) []float64 {
	ns := scopes.PairDelays(nil, c.Edges[src], c.Edges[dst], cfg.SourceEdge, cfg.DestEdge, cfg.PopulationLimit)
	return scopes.NsToSeconds(nil, ns)
}
