//go:build linux

package gpiocap_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/gpiocap"
	"github.com/hilrig/hilrig/scopes/scopetest"
)

var chipSeq atomic.Int64

// bench is a simulated chip with a sender and a receiver marker (toggle
// mode, driven by this process like two boards would) and a capture
// watching the same two lines, as a capture board's inputs wired to them.
type bench struct {
	chip     string
	tx, rx   gpio.LineSpec
	snd, rcv *gpio.Output
	cap      *gpiocap.Capture
	probe    *gpio.Watcher // the feed's own view, to know where its edges landed
	txOff    int
	t        *testing.T
}

func newBench(t *testing.T, cfg gpiocap.Config) *bench {
	t.Helper()
	name := fmt.Sprintf("gpiocap%d-%d", os.Getpid(), chipSeq.Add(1))
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 4, LineNames: []string{"MARK_TX", "MARK_RX", "SPARE", "OTHER"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chip.Close(); chip.Remove() })
	ctx := t.Context()
	b := &bench{t: t, chip: "sim:" + name, tx: gpio.LineSpec{Chip: kind.SimChip(name), Line: "MARK_TX"}, rx: gpio.LineSpec{Chip: kind.SimChip(name), Line: "MARK_RX"}}
	if cfg.Channels == nil {
		cfg.Channels = map[int]gpio.LineSpec{1: b.tx, 2: b.rx}
	}
	if b.cap, err = gpiocap.Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.cap.Close() })
	if b.probe, err = gpio.Watch(ctx, b.tx, b.rx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.probe.Close() })
	b.txOff = b.probe.Offsets()[0]
	if b.snd, err = gpio.Open(ctx, b.tx, gpio.Mode{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.snd.Close() })
	if b.rcv, err = gpio.Open(ctx, b.rx, gpio.Mode{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.rcv.Close() })
	return b
}

// edge reads the probe's next edge and checks it is the expected one.
func (b *bench) edge(ctx context.Context, sender, rising bool) (int64, error) {
	var e gpio.Edge
	if err := b.probe.ReadEdge(ctx, &e); err != nil {
		return 0, err
	}
	if (e.Line == b.txOff) != sender || e.Rising != rising {
		return 0, fmt.Errorf("probe saw %v, want sender=%v rising=%v", e, sender, rising)
	}
	return e.TimestampNs, nil
}

// feed makes one toggle-mode pulse pair per delay: sender rises, the
// receiver rises delay ns later (spinning on CLOCK_MONOTONIC, the chip's
// timestamp clock), then both fall. It measures where each receiver edge
// landed and returns ErrInexactFeed when one missed by more than slackNs.
// It returns once the capture holds every edge.
func (b *bench) feed(ctx context.Context, delays []int64, slackNs int64) error {
	// The sender's Mark wakes the capture's sleeping reader; on a busy
	// host the woken thread preempts a CFS feeding thread for 10–400 µs
	// and the receiver edge lands late. A SCHED_FIFO feeding thread is not
	// preempted by it (as a marker thread on a rack would run). The thread
	// is locked and never unlocked, so it dies with the goroutine, and its
	// policy with it. (Marking the receiver from a second spinning FIFO
	// thread was tried and is far worse on two shared cores: the Go
	// scheduler and kernel threads starve.)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 10}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			b.t.Logf("feed thread without SCHED_FIFO (%v): pulses preempted are re-fed", err)
		}
		errc <- b.pulses(ctx, delays, slackNs)
	}()
	return <-errc
}

func (b *bench) pulses(ctx context.Context, delays []int64, slackNs int64) error {
	before := b.cap.Captured()
	var worst int64
	for _, d := range delays {
		// Both stamps are taken inside Mark at the same point, so timing
		// the spin from just before the sender's Mark cancels the cost of
		// Mark itself; the edges are read back afterwards to see where
		// they really landed. A delay shorter than a whole Mark (stamp
		// plus the futex wake of sleeping watchers) cannot be made.
		t0 := gpio.MonotonicNs()
		if err := b.snd.Mark(); err != nil {
			return err
		}
		for gpio.MonotonicNs() < t0+d {
		}
		if err := b.rcv.Mark(); err != nil {
			return err
		}
		ts, err := b.edge(ctx, true, true)
		if err != nil {
			return err
		}
		tr, err := b.edge(ctx, false, true)
		if err != nil {
			return err
		}
		miss := tr - ts - d
		if miss < 0 {
			miss = -miss
		}
		worst = max(worst, miss)
		if err := b.snd.Mark(); err != nil {
			return err
		}
		if err := b.rcv.Mark(); err != nil {
			return err
		}
		if _, err := b.edge(ctx, true, false); err != nil {
			return err
		}
		if _, err := b.edge(ctx, false, false); err != nil {
			return err
		}
	}
	want := before + 4*len(delays)
	for b.cap.Captured() < want {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("capture holds %d edges, want %d: %w", b.cap.Captured(), want, err)
		}
		time.Sleep(time.Millisecond) // polling with the context's deadline
	}
	if worst > slackNs {
		return fmt.Errorf("%w: a receiver edge landed %d ns from its target (slack %d ns)", scopetest.ErrInexactFeed, worst, slackNs)
	}
	return nil
}

// slackNs: the simulated chip is stamped by the marking thread's clock
// read inside Mark, and both Marks stamp at the same point, so pulses
// land within a few hundred ns of the target. A pulse that missed (an
// interrupt, a vCPU the hypervisor took away) is detected and the whole
// feed is repeated. Under -race a Mark costs ≈ 10 µs, longer than the
// conformance test's shortest delay (5 µs), so the slack is widened there
// (race_test.go) and the timing checks are correspondingly weaker.
const slackNs = 1000 + raceSlackNs

func TestConformanceGPIOSim(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	scopetest.Run(t, func(t *testing.T) scopetest.Rig {
		b := newBench(t, gpiocap.Config{MaxDelay: time.Millisecond})
		return scopetest.Rig{Scope: b.cap, Source: 1, Dest: 2, FeedSlackNs: slackNs, FeedAttempts: 30,
			Feed: func(ctx context.Context, d []int64) error { return b.feed(ctx, d, slackNs) }}
	})
}

func TestIdentify(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{})
	id, err := b.cap.Identify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if id.Vendor != "hilrig" || id.Model != "gpio-capture" || id.Serial != b.chip ||
		!strings.Contains(id.Raw, "CH1="+b.chip+"/MARK_TX") || !strings.Contains(id.Raw, "CH2="+b.chip+"/MARK_RX") {
		t.Fatalf("identity %+v", id)
	}
}

// Lost messages and spurious edges are counted and explained, not hidden
// and not turned into delays.
func TestUnmatchedReported(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{MaxDelay: 2 * time.Millisecond})
	ctx := t.Context()
	if err := b.cap.ConfigureDelay(ctx, scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.cap.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	// A good pulse pair (20 µs), then a sender pulse whose message is lost
	// (no receiver edges), then another good pair.
	if err := b.feed(ctx, []int64{20_000}, 1<<40); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.snd.Mark(); err != nil {
			t.Fatal(err)
		}
	}
	lostAt := gpio.MonotonicNs()
	for gpio.MonotonicNs() < lostAt+5_000_000 { // beyond MaxDelay, so the lost pulse cannot pair with the next
		time.Sleep(time.Millisecond) // the timing itself is what is tested: the gap is on the chip's clock
	}
	if _, err := b.edge(ctx, true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := b.edge(ctx, true, false); err != nil {
		t.Fatal(err)
	}
	if err := b.feed(ctx, []int64{30_000}, 1<<40); err != nil {
		t.Fatal(err)
	}
	st, err := b.cap.ReadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := b.cap.Pairing()
	if st.Count.N != 2 || p.Delays != 2 || len(p.Unmatched) != 2 || p.SenderEdges != 6 || p.ReceiverEdges != 4 || p.Clean() {
		t.Fatalf("stats %v, pairing %s: want 2 delays and the 2 lost sender edges unmatched", st, p)
	}
	for _, u := range p.Unmatched {
		if !u.Sender || !strings.Contains(u.Reason, "message lost") {
			t.Fatalf("unmatched %+v: want a sender edge with reason 'message lost'", u)
		}
	}
	if !strings.Contains(p.String(), "unmatched 2") || !strings.Contains(p.String(), "first unmatched: sender edge") {
		t.Fatalf("pairing string %q", p.String())
	}
	if st.Min.V < 19e-6 || st.Max.V > 1e-3 {
		// Real-time edges land late, never early; a lost pulse paired
		// with the next receiver edge would be ≥ 5 ms.
		t.Fatalf("stats %v: the lost pulse leaked into the delays", st)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{})
	ctx := t.Context()
	checkErrs(t, []errCase[scopes.DelayConfig]{
		{"unwired channel", scopes.DelayConfig{Source: 1, Dest: 3}, scopes.ErrBadConfig, "channel 3 is not wired (wired: [1 2])"},
		{"threshold", scopes.DelayConfig{Source: 1, Dest: 2, ThresholdV: 1.65, HasThreshold: true}, scopes.ErrNotSupported, "fixed logic threshold"},
		{"mixed polarity", scopes.DelayConfig{Source: 1, Dest: 2, DestEdge: scopes.Falling}, scopes.ErrNotSupported, "active-low"},
		{"same channel", scopes.DelayConfig{Source: 2, Dest: 2}, scopes.ErrBadConfig, "both channel 2"},
	}, func(cfg scopes.DelayConfig) error { return b.cap.ConfigureDelay(ctx, cfg) })
}

// errCase is one row of a table of refused configurations: cfg must
// fail with an error matching want (errors.Is) whose text contains text.
type errCase[C any] struct {
	name string
	cfg  C
	want error
	text string
}

// checkErrs runs try on every case's cfg as a subtest and fails it
// unless the error is the case's.
func checkErrs[C any](t *testing.T, cases []errCase[C], try func(C) error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := try(tc.cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{})
	other := fmt.Sprintf("gpiocapother%d", os.Getpid())
	chip, err := gpiosim.Create(other, gpiosim.Config{Lines: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chip.Close(); chip.Remove() })
	ctx := t.Context()
	checkErrs(t, []errCase[gpiocap.Config]{
		{"one channel", gpiocap.Config{Channels: map[int]gpio.LineSpec{1: b.tx}}, scopes.ErrBadConfig, "need the sender's and the receiver's"},
		{"two chips", gpiocap.Config{Channels: map[int]gpio.LineSpec{1: b.tx, 2: {Chip: kind.SimChip(other), Line: "1"}}}, scopes.ErrBadConfig, "one capture watches one chip"},
		{"bad window", gpiocap.Config{Channels: map[int]gpio.LineSpec{1: b.tx, 2: b.rx}, MinDelay: time.Second, MaxDelay: time.Millisecond}, scopes.ErrBadConfig, "must exceed MinDelay"},
		{"missing chip", gpiocap.Config{Channels: map[int]gpio.LineSpec{1: {Chip: "sim:nope", Line: "0"}, 2: {Chip: "sim:nope", Line: "1"}}}, gpio.ErrChipMissing, "CH1=sim:nope/0 CH2=sim:nope/1"},
		{"missing line", gpiocap.Config{Channels: map[int]gpio.LineSpec{1: b.tx, 2: {Chip: kind.Chip(b.chip), Line: "NOPE"}}}, gpio.ErrLineNotFound, "CH2=" + b.chip + "/NOPE"},
	}, func(cfg gpiocap.Config) error {
		c, err := gpiocap.Open(ctx, cfg)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func TestClosed(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{})
	ctx := t.Context()
	if err := b.cap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.cap.Close(); !errors.Is(err, scopes.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.cap.ReadStats(ctx); !errors.Is(err, scopes.ErrClosed) {
		t.Fatalf("ReadStats after Close: %v", err)
	}
	if err := b.cap.ResetStats(ctx); !errors.Is(err, scopes.ErrClosed) {
		t.Fatalf("ResetStats after Close: %v", err)
	}
}

// With BothEdges the falling pairs count too: toggle markers, one edge
// per message.
func TestBothEdges(t *testing.T) {
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	b := newBench(t, gpiocap.Config{MaxDelay: time.Millisecond, BothEdges: true})
	ctx := t.Context()
	if err := b.cap.ConfigureDelay(ctx, scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.cap.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.feed(ctx, []int64{20_000, 20_000, 20_000}, 1<<40); err != nil {
		t.Fatal(err)
	}
	st, err := b.cap.ReadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.cap.FetchDelays(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := b.cap.Pairing()
	if st.Count.N != 6 || len(d) != 6 || !p.Clean() || p.Pairs != 6 {
		t.Fatalf("stats %v, %d delays, pairing %s: want all 6 edges of 3 pulses paired", st, len(d), p)
	}
	// Edges (a copy) holds every edge of both channels, on the lines
	// Channels maps them to (a recording's /hilrig/gpio).
	edges, ch := b.cap.Edges(nil), b.cap.Channels()
	if len(edges) != 12 || len(ch) != 2 {
		t.Fatalf("%d edges on %d channels, want 12 (3 pulses × 2 edges × 2 channels) on 2", len(edges), len(ch))
	}
	lines := map[int]bool{}
	for _, l := range ch {
		lines[l] = true
	}
	for _, e := range edges {
		if !lines[e.Line] || e.TimestampNs <= 0 {
			t.Fatalf("edge %s on a line not among the channels %v", e, ch)
		}
	}
	ch[99] = 1
	if len(b.cap.Channels()) != 2 {
		t.Fatal("Channels handed out its own map")
	}
}
