package soakrun_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// openMarker makes a private simulated GPIO chip and opens line 0 as a
// toggle marker (the sim rack's marker path; on a lab rack this is a
// character-device ioctl instead).
func openMarker(tb testing.TB) *gpio.Output {
	tb.Helper()
	name := fmt.Sprintf("soakbench%d", os.Getpid())
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 2, Label: "hilrig-soakrun-bench"})
	if err != nil {
		tb.Skipf("simulated GPIO chip: %v", err)
	}
	tb.Cleanup(func() { _ = chip.Remove() })
	out, err := gpio.Open(context.Background(), gpio.LineSpec{Chip: kind.SimChip(name), Line: "0"}, gpio.Mode{Kind: gpio.Toggle})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = out.Close() })
	return out
}

// perMessage is the harness's own work per message at the subscriber: one
// marker edge, one CLOCK_MONOTONIC read, one histogram record.
func perMessage(m *gpio.Output, h *report.Histogram, sendMono int64) error {
	if err := m.Mark(); err != nil {
		return err
	}
	h.Record(gpio.MonotonicNs() - sendMono)
	return nil
}

// BenchmarkHarnessOverhead measures the harness's cost per message and,
// in the same run, its parts as baselines (compare ratios, not absolute
// ns: the machine is shared).
func BenchmarkHarnessOverhead(b *testing.B) {
	m := openMarker(b)
	h := report.NewHistogram()
	send := gpio.MonotonicNs()
	b.Run("marker+timestamp+record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := perMessage(m, h, send); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline/timestamp", func(b *testing.B) {
		b.ReportAllocs()
		var x int64
		for b.Loop() {
			x += gpio.MonotonicNs()
		}
		_ = x
	})
	b.Run("baseline/record", func(b *testing.B) {
		b.ReportAllocs()
		v := int64(0)
		for b.Loop() {
			v = (v + 7919) & 0xfffff
			h.Record(v + 1000)
		}
	})
	b.Run("baseline/marker", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Mark(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The per-message path must not allocate (it runs at up to 10 kHz for
// 72 hours).
func TestHarnessOverheadDoesNotAllocate(t *testing.T) {
	m := openMarker(t)
	h := report.NewHistogram()
	send := gpio.MonotonicNs()
	var err error
	if n := testing.AllocsPerRun(1000, func() { err = perMessage(m, h, send) }); n != 0 {
		t.Fatalf("per-message harness path allocates %.1f times per message", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.Count() == 0 {
		t.Fatal("nothing recorded")
	}
}

var sim72h = flag.Bool("soakrun.sim72h", false, "run the simulated 72 h @ 1 kHz memory test (259.2 M samples; a few minutes)")

// TestSimulated72hMemoryIsConstant records 72 h × 1 kHz = 259.2 million
// latency samples the way a soak does — per 10 s window: the agent's
// window histogram (recorded, then reset), the controller's window
// (histogram merged from it, appended to a real fsynced checkpoint, then
// dropped) and the running total — as fast as the CPU allows, sampling
// this process's RSS and Go heap every 1 % of the windows. What is
// simulated: time (no real 72 h), the network and the agent process (both
// sides run in this process, so the RSS is controller + agent together).
// What is real: the histograms, the checkpoint writer and its fsyncs, the
// soak.Read of the 25,920-window file. Constant memory means: RSS after
// warm-up grows by less than 1 % of the peak... measured, not assumed.
func TestSimulated72hMemoryIsConstant(t *testing.T) {
	if !*sim72h {
		t.Skip("enable with -soakrun.sim72h (runs for minutes)")
	}
	const (
		rate    = 1000
		window  = 10 * time.Second
		horizon = 72 * time.Hour
	)
	windows := int(horizon / window)
	perWin := uint64(rate * window.Seconds())
	path := filepath.Join(t.TempDir(), "sim72h.jsonl")
	t0 := time.Now().Add(-horizon)
	cp, err := soak.Create(path, soak.Header{Name: "simulated 72h @ 1 kHz", Started: t0, Window: window, Planned: horizon})
	if err != nil {
		t.Fatal(err)
	}
	syn := soakrun.NewSynth(rate, 60e3, 1)
	agentWin := report.NewHistogram()
	total := report.NewHistogram()
	type pt struct {
		win          int
		rss, heapUse int64
	}
	var series []pt
	var ms runtime.MemStats
	sample := func(i int) {
		runtime.ReadMemStats(&ms)
		series = append(series, pt{i, hostinfo.ProcessRSS(), int64(ms.HeapInuse)})
	}
	start := time.Now()
	var samples uint64
	for i := range windows {
		agentWin.Reset()
		syn.RecordInto(agentWin, perWin)
		samples += perWin
		ctrl := report.NewHistogram() // the controller decodes a fresh one per window
		ctrl.Merge(agentWin)
		total.Merge(ctrl)
		ws := t0.Add(time.Duration(i) * window)
		w := soak.Window{Start: ws, End: ws.Add(window), Agents: []soak.AgentWindow{{Agent: "board", RSSBytes: hostinfo.ProcessRSS(),
			Streams: []soak.StreamWindow{{Stream: "imu", Sent: int64(perWin), Delivered: int64(perWin), Histogram: ctrl}}}}}
		if err := cp.Append(&w); err != nil {
			t.Fatal(err)
		}
		if i%(windows/100) == 0 {
			sample(i)
		}
	}
	sample(windows)
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	lg := readLog(t, path)
	sample(windows)
	fi, _ := os.Stat(path)
	var b strings.Builder
	fmt.Fprintf(&b, "simulated %d windows of %v = %v, %d samples (%.1f M) in %v; checkpoint %.1f MiB; read back %d windows, total count %d\n",
		windows, window, horizon, samples, float64(samples)/1e6, elapsed.Round(time.Second), float64(fi.Size())/(1<<20), len(lg.Windows), lg.Totals["board/imu"].Count())
	fmt.Fprintf(&b, "%8s %10s %10s\n", "window", "RSS MiB", "heap MiB")
	var peak, afterWarm int64
	for k, p := range series {
		fmt.Fprintf(&b, "%8d %10.1f %10.1f\n", p.win, float64(p.rss)/(1<<20), float64(p.heapUse)/(1<<20))
		peak = max(peak, p.rss)
		if k == 10 { // 10 % of the run: pools and page cache settled
			afterWarm = p.rss
		}
	}
	t.Log("\n" + b.String())
	if got := total.Count(); got != int64(samples) {
		t.Fatalf("total histogram holds %d samples, recorded %d", got, samples)
	}
	if len(lg.Windows) != windows {
		t.Fatalf("checkpoint holds %d windows, appended %d", len(lg.Windows), windows)
	}
	// Writing phase: from 10 % to the end of the writing, RSS must not grow
	// by more than 8 MiB (GC heap target jitter), whatever the sample count.
	endWrite := series[len(series)-2].rss
	if endWrite-afterWarm > 8<<20 {
		t.Fatalf("RSS grew %.1f MiB from 10 %% to the end of the simulated 72 h (peak %.1f MiB): not constant",
			float64(endWrite-afterWarm)/(1<<20), float64(peak)/(1<<20))
	}
}
