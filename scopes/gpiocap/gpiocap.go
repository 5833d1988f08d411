// Package gpiocap is the "software scope" of docs/gpio.md as a
// [scopes.Scope]: a third board whose GPIO inputs are wired to the
// sender's and the receiver's marker lines times edge to edge with the
// kernel's edge timestamps (gpio.Watch), so a lab without an oscilloscope
// still has a ground truth that involves neither board's clock nor
// software stamps.
//
// Edges are paired k-th sender ↔ k-th receiver with [gpio.PairEdges];
// what could not be paired (lost messages, spurious edges, edges the
// capture dropped or the kernel merged) is counted and explained in
// [Pairing], never silently left out. Resolution is the kernel's
// timestamping of the GPIO interrupt (on a real board microseconds of IRQ
// latency, not the nanoseconds of a scope); on the simulated chip it is
// the marking process's CLOCK_MONOTONIC read.
package gpiocap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/scopes"
)

// Defaults.
const (
	// DefaultMaxDelay is the pairing window when Config.MaxDelay is 0.
	DefaultMaxDelay = 10 * time.Millisecond
	// DefaultMaxEdges bounds the edges kept between a reset and a read
	// (≈ 48 MiB); edges beyond it are discarded and counted.
	DefaultMaxEdges = 1 << 20
)

// Config describes the capture board's inputs.
type Config struct {
	// Channels maps 1-based channel numbers (what [scopes.DelayConfig]
	// names as Source and Dest) to the input lines wired to the markers.
	// At least two; all on one chip (one watch covers one chip).
	Channels map[int]gpio.LineSpec
	// MinDelay and MaxDelay bound a plausible sender→receiver delay
	// ([gpio.PairOptions]); MaxDelay 0 means DefaultMaxDelay. Keep MaxDelay
	// below the marking interval (1/rate in toggle mode).
	MinDelay, MaxDelay time.Duration
	// EventBufferSize is the watch's event buffer in edges (0 = default):
	// the kernel kfifo (16 per line by default) or the simulated ring.
	EventBufferSize int
	// MaxEdges bounds the edges kept between a reset and a read
	// (0 = DefaultMaxEdges).
	MaxEdges int
	// BothEdges uses rising and falling pairs alike, ignoring the
	// polarity of the DelayConfig: with toggle-mode markers every edge is
	// one message, so the delays cover every message (as the software
	// samples do) instead of every other one. A pair whose sender and
	// receiver edges disagree in direction is still not used.
	BothEdges bool
	// Logger receives the reader's overflow and failure reports; nil
	// discards them.
	Logger *slog.Logger
}

// Pairing accounts for every edge of the last analysis (ReadStats or
// FetchDelays): what was paired, used, and what was not and why.
type Pairing struct {
	// SenderEdges and ReceiverEdges are the edges captured on the source
	// and destination channels since the last reset.
	SenderEdges, ReceiverEdges int
	// Pairs is what gpio.PairEdges matched; Delays those of the requested
	// polarity within the population limit (the statistics' count).
	Pairs, Delays int
	// PolarityMismatch counts pairs whose sender and receiver edges have
	// different directions (an alignment shifted by a lost edge); they
	// are not used.
	PolarityMismatch int
	// Unmatched are the edges with no partner, with the reason.
	Unmatched []gpio.Unmatched
	// SenderDropped … Resyncs are gpio.PairResult's accounting: edges
	// lost in capture (LineSeqno gaps), edges merged by the kernel
	// (direction breaks), and shifts of the k-th ↔ k-th alignment.
	SenderDropped, ReceiverDropped uint64
	SenderMerged, ReceiverMerged   uint64
	Resyncs                        int
	// Overflows counts reads of the watch that reported lost edges since
	// the last reset; BufferFull counts edges discarded because MaxEdges
	// was reached.
	Overflows, BufferFull uint64
}

// Clean reports whether every captured edge was paired and nothing was
// lost, merged or discarded.
func (p Pairing) Clean() bool {
	return len(p.Unmatched) == 0 && p.PolarityMismatch == 0 && p.SenderDropped+p.ReceiverDropped+
		p.SenderMerged+p.ReceiverMerged+p.Overflows+p.BufferFull == 0 && p.Resyncs == 0
}

// String renders the accounting on one line, e.g. "edges 200/200, pairs
// 200, delays 100, unmatched 0, dropped 0/0, merged 0/0, resyncs 0".
func (p Pairing) String() string {
	s := fmt.Sprintf("edges %d/%d, pairs %d, delays %d, unmatched %d, dropped %d/%d, merged %d/%d, resyncs %d",
		p.SenderEdges, p.ReceiverEdges, p.Pairs, p.Delays, len(p.Unmatched), p.SenderDropped, p.ReceiverDropped,
		p.SenderMerged, p.ReceiverMerged, p.Resyncs)
	if p.PolarityMismatch > 0 {
		s += fmt.Sprintf(", polarity mismatches %d", p.PolarityMismatch)
	}
	if p.Overflows > 0 {
		s += fmt.Sprintf(", watch overflows %d", p.Overflows)
	}
	if p.BufferFull > 0 {
		s += fmt.Sprintf(", %d edges discarded (capture buffer full)", p.BufferFull)
	}
	if len(p.Unmatched) > 0 {
		u := p.Unmatched[0]
		who := "receiver"
		if u.Sender {
			who = "sender"
		}
		s += fmt.Sprintf("; first unmatched: %s edge at %d ns: %s", who, u.Edge.TimestampNs, u.Reason)
	}
	return s
}

// Capture is a [scopes.Scope] and [scopes.DelayFetcher] backed by a GPIO
// watch. A background goroutine (owned by the Capture, stopped by Close)
// drains the watch continuously so that the kernel's small event buffer
// does not overflow between reset and read. Timestamps are
// CLOCK_MONOTONIC.
//
// One goroutine owns a Capture (like every Scope); [Capture.Captured]
// and [Capture.Pairing] may be called from any goroutine.
type Capture struct {
	cfg     Config
	log     *slog.Logger
	w       *gpio.Watcher
	chip    string
	offsets map[int]int // channel → line offset
	cancel  context.CancelFunc
	done    chan struct{}

	delay      scopes.DelayConfig
	configured bool
	closed     bool

	mu         sync.Mutex
	resetNs    int64
	edges      []gpio.Edge
	overflows  uint64
	bufferFull uint64
	readErr    error
	last       Pairing
}

var (
	_ scopes.Scope        = (*Capture)(nil)
	_ scopes.DelayFetcher = (*Capture)(nil)
)

// Open validates cfg, starts watching every channel's line (only edges
// after Open returns are seen) and starts the background reader. Close
// it when done. Blocks only while the watch is set up.
func Open(ctx context.Context, cfg Config) (*Capture, error) {
	if len(cfg.Channels) < 2 {
		return nil, fmt.Errorf("gpiocap: %d channel(s) configured: need the sender's and the receiver's marker line: %w", len(cfg.Channels), scopes.ErrBadConfig)
	}
	chans := slices.Sorted(maps.Keys(cfg.Channels))
	specs := make([]gpio.LineSpec, len(chans))
	for i, ch := range chans {
		s := cfg.Channels[ch]
		if ch < 1 || ch > 64 {
			return nil, fmt.Errorf("gpiocap: channel %d out of range 1..64: %w", ch, scopes.ErrBadConfig)
		}
		if s.Chip == "" || s.Line == "" {
			return nil, fmt.Errorf("gpiocap: channel %d: line spec %+v needs a chip and a line: %w", ch, s, scopes.ErrBadConfig)
		}
		if s.Chip != specs[0].Chip && i > 0 {
			return nil, fmt.Errorf("gpiocap: channel %d is on chip %q, channel %d on %q: one capture watches one chip (wire both markers to inputs of one chip): %w",
				ch, s.Chip, chans[0], specs[0].Chip, scopes.ErrBadConfig)
		}
		if s.Consumer == "" {
			s.Consumer = fmt.Sprintf("hilrig-gpiocap-ch%d", ch)
		}
		specs[i] = s
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxDelay <= cfg.MinDelay {
		return nil, fmt.Errorf("gpiocap: MaxDelay %v must exceed MinDelay %v: %w", cfg.MaxDelay, cfg.MinDelay, scopes.ErrBadConfig)
	}
	if cfg.MaxEdges <= 0 {
		cfg.MaxEdges = DefaultMaxEdges
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w, err := gpio.WatchWith(ctx, &gpio.WatchOptions{Clock: gpio.ClockMonotonic, EventBufferSize: cfg.EventBufferSize}, specs...)
	if err != nil {
		return nil, fmt.Errorf("gpiocap: watch %s: %w", describe(chans, specs), err)
	}
	offs := w.Offsets()
	c := &Capture{cfg: cfg, log: log, w: w, chip: specs[0].Chip.String(), offsets: map[int]int{}, done: make(chan struct{}),
		resetNs: gpio.MonotonicNs()}
	for i, ch := range chans {
		c.offsets[ch] = offs[i]
	}
	rctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.read(rctx)
	return c, nil
}

func describe(chans []int, specs []gpio.LineSpec) string {
	var b strings.Builder
	for i, ch := range chans {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "CH%d=%s/%s", ch, specs[i].Chip, specs[i].Line)
	}
	return b.String()
}

// read drains the watch until Close. An overflow is counted and the edges
// after the gap kept (their LineSeqno gap is what PairEdges counts).
func (c *Capture) read(ctx context.Context) {
	defer close(c.done)
	buf := make([]gpio.Edge, 256)
	for {
		n, err := c.w.ReadEdges(ctx, buf)
		c.mu.Lock()
		for _, e := range buf[:n] {
			if e.TimestampNs < c.resetNs {
				continue // happened before the reset, read after it
			}
			if len(c.edges) >= c.cfg.MaxEdges {
				c.bufferFull++
				continue
			}
			c.edges = append(c.edges, e)
		}
		switch {
		case err == nil:
		case errors.Is(err, gpio.ErrOverflow):
			c.overflows++
			c.log.Warn("gpiocap: watch overflow: edges lost", "chip", c.chip, "err", err)
		case ctx.Err() != nil || errors.Is(err, gpio.ErrClosed):
			c.mu.Unlock()
			return
		default:
			c.readErr = err
			c.mu.Unlock()
			c.log.Error("gpiocap: capture stopped", "chip", c.chip, "err", err)
			return
		}
		c.mu.Unlock()
	}
}

// Identify returns vendor "hilrig", model "gpio-capture", the chip as
// serial and the channel wiring in Raw. Does not block.
func (c *Capture) Identify(ctx context.Context) (scopes.Identity, error) {
	if c.closed {
		return scopes.Identity{}, fmt.Errorf("gpiocap: identify: %w", scopes.ErrClosed)
	}
	chans := slices.Sorted(maps.Keys(c.cfg.Channels))
	specs := make([]gpio.LineSpec, len(chans))
	for i, ch := range chans {
		specs[i] = c.cfg.Channels[ch]
	}
	raw := fmt.Sprintf("hilrig,gpio-capture,%s,%s (kernel edge timestamps, monotonic)", c.chip, describe(chans, specs))
	return scopes.Identity{Vendor: "hilrig", Model: "gpio-capture", Serial: c.chip, Firmware: "monotonic", Raw: raw}, nil
}

// ConfigureDelay selects the source and destination channels. The inputs
// are digital, so a threshold is ErrNotSupported; mixed polarities are
// ErrNotSupported too, because the k-th ↔ k-th pairing matches like
// edges of two alternating lines (invert a line with active-low in its
// line spec instead). Does not block.
func (c *Capture) ConfigureDelay(ctx context.Context, cfg scopes.DelayConfig) error {
	if c.closed {
		return fmt.Errorf("gpiocap: configure: %w", scopes.ErrClosed)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gpiocap: configure: %w", err)
	}
	for _, ch := range []int{cfg.Source, cfg.Dest} {
		if _, ok := c.cfg.Channels[ch]; !ok {
			return fmt.Errorf("gpiocap: configure: channel %d is not wired (wired: %v): %w", ch, slices.Sorted(maps.Keys(c.cfg.Channels)), scopes.ErrBadConfig)
		}
	}
	if cfg.HasThreshold {
		return fmt.Errorf("gpiocap: configure: threshold %gV: GPIO inputs have a fixed logic threshold: %w", cfg.ThresholdV, scopes.ErrNotSupported)
	}
	if cfg.SourceEdge != cfg.DestEdge {
		return fmt.Errorf("gpiocap: configure: %v→%v: pairing matches like edges; make the receiver line active-low instead: %w", cfg.SourceEdge, cfg.DestEdge, scopes.ErrNotSupported)
	}
	c.delay, c.configured = cfg, true
	return nil
}

// ResetStats discards the edges captured so far: the next read covers
// edges whose kernel timestamp is at or after this call. Does not block.
func (c *Capture) ResetStats(ctx context.Context) error {
	if c.closed {
		return fmt.Errorf("gpiocap: reset: %w", scopes.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr != nil {
		return fmt.Errorf("gpiocap: reset: %w: %w", ErrCaptureStopped, c.readErr)
	}
	c.resetNs = gpio.MonotonicNs()
	c.edges = c.edges[:0]
	c.overflows, c.bufferFull = 0, 0
	c.last = Pairing{}
	return nil
}

// ReadStats pairs the edges captured since the last reset and returns
// their statistics (population standard deviation, count = delays used).
// Edges still in flight are not waited for; poll [Capture.Captured]. The
// accounting of this read is in [Capture.Pairing]. Does not block.
func (c *Capture) ReadStats(ctx context.Context) (scopes.Stats, error) {
	d, err := c.analyse(nil)
	if err != nil {
		return scopes.Stats{}, err
	}
	return scopes.CaptureStats(d, c.delay.PopulationLimit, "gpio-capture")
}

// FetchDelays appends the delays (seconds, in sender edge order) behind
// the statistics of the edges captured since the last reset. Does not
// block.
func (c *Capture) FetchDelays(ctx context.Context, dst []float64) ([]float64, error) {
	return c.analyse(dst)
}

func (c *Capture) analyse(dst []float64) ([]float64, error) {
	if c.closed {
		return dst, fmt.Errorf("gpiocap: read: %w", scopes.ErrClosed)
	}
	if !c.configured {
		return dst, fmt.Errorf("gpiocap: read: %w", scopes.ErrNotConfigured)
	}
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return dst, fmt.Errorf("gpiocap: read: %w: %w", ErrCaptureStopped, err)
	}
	sender, receiver := gpio.SplitLines(c.edges, c.offsets[c.delay.Source], c.offsets[c.delay.Dest])
	p := Pairing{Overflows: c.overflows, BufferFull: c.bufferFull}
	c.mu.Unlock()

	r, err := gpio.PairEdges(sender, receiver, gpio.PairOptions{MinDelay: c.cfg.MinDelay, MaxDelay: c.cfg.MaxDelay})
	if err != nil {
		return dst, fmt.Errorf("gpiocap: pair CH%d→CH%d: %w", c.delay.Source, c.delay.Dest, err)
	}
	p.SenderEdges, p.ReceiverEdges, p.Pairs = len(sender), len(receiver), len(r.Pairs)
	p.Unmatched = r.Unmatched
	p.SenderDropped, p.ReceiverDropped = r.SenderDropped, r.ReceiverDropped
	p.SenderMerged, p.ReceiverMerged, p.Resyncs = r.SenderMerged, r.ReceiverMerged, r.Resyncs
	want := c.delay.SourceEdge == scopes.Rising
	for _, pr := range r.Pairs {
		if pr.Sender.Rising != want && !c.cfg.BothEdges {
			continue
		}
		if pr.Receiver.Rising != pr.Sender.Rising {
			p.PolarityMismatch++
			continue
		}
		if lim := c.delay.PopulationLimit; lim > 0 && p.Delays >= lim {
			break
		}
		dst = append(dst, float64(pr.DelayNs)*1e-9)
		p.Delays++
	}
	c.mu.Lock()
	c.last = p
	c.mu.Unlock()
	return dst, nil
}

// Pairing returns the accounting of the last ReadStats or FetchDelays.
// Safe for concurrent use.
func (c *Capture) Pairing() Pairing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Captured returns how many edges (all channels) were captured since the
// last reset, for polling until in-flight edges are in. Safe for
// concurrent use.
func (c *Capture) Captured() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.edges)
}

// Edges appends to dst the edges (all channels) captured since the last
// reset, in capture order, and returns it; Channels maps them to the
// capture's channels. For a recording of the edges (`record: on`). Safe
// for concurrent use.
func (c *Capture) Edges(dst []gpio.Edge) []gpio.Edge {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(dst, c.edges...)
}

// Channels returns the capture's channels: channel number → line offset
// on its chip (a copy). Safe for concurrent use.
func (c *Capture) Channels() map[int]int {
	return maps.Clone(c.offsets)
}

// Close stops the background reader and the watch (releasing real input
// lines) and waits for the reader to end. A second Close returns
// scopes.ErrClosed.
func (c *Capture) Close() error {
	if c.closed {
		return fmt.Errorf("gpiocap: close: %w", scopes.ErrClosed)
	}
	c.closed = true
	c.cancel()
	err := c.w.Close()
	<-c.done
	if err != nil && !errors.Is(err, gpio.ErrClosed) {
		return fmt.Errorf("gpiocap: close watch on %s: %w", c.chip, err)
	}
	return nil
}
