package dut_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/dut/duttest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// testRack has the two example programs on a local board; "sim:t" is
// mapped to a chip of the test's own (placement).
const testRack = `name: t
boards:
  - {name: a, reach: local}
duts:
  - name: imu
    board: a
    build: ./dut/examples/imu
    command: [imu]
    inputs:
      - {name: imu, topic: dut/imu}
    outputs:
      - {name: cmd, topic: dut/cmd}
      - {name: done, gpio: {name: done, chip: "sim:t", offset: 0}}
    correlation: {mode: echo, input: imu, output: cmd, offset: 0, deadline: 4ms}
    stimulus: {rate_hz: 100, count: 100}
    bounds: {max_miss_rate: 0.05}
  - name: edge
    board: a
    build: ./dut/examples/gpioecho
    command: [gpioecho, -delay, 300us]
    inputs:
      - {name: in, gpio: {name: in, chip: "sim:t", offset: 1}}
    outputs:
      - {name: out, gpio: {name: out, chip: "sim:t", offset: 2}}
    correlation: {mode: next, input: in, output: out, deadline: 8ms, ground_truth: out}
    stimulus: {rate_hz: 100, count: 60}
    bounds: {ground_truth_tolerance: 1s, max_miss_rate: 0.5}
  - name: cyclone
    board: a
    external: true
    inputs:
      - {name: imu, topic: rt/imu, middleware: cyclonedds}
    outputs:
      - {name: cmd, topic: rt/cmd}
    correlation: {mode: next, input: imu, output: cmd, deadline: 1ms}
    stimulus: {rate_hz: 100, count: 10}
  - name: silent
    board: a
    external: true
    inputs:
      - {name: imu, topic: dut/silent-in}
    outputs:
      - {name: cmd, topic: dut/silent-out}
    correlation: {mode: next, input: imu, output: cmd, deadline: 1ms}
    stimulus: {rate_hz: 100, count: 10}
`

var domains atomic.Int64

var buildOnce = sync.OnceValue(func() error {
	// Both examples, once per test binary (deploy.Build caches by content).
	for _, p := range []string{"./dut/examples/imu", "./dut/examples/gpioecho"} {
		if _, err := deploy.Build(context.Background(), deploy.BuildOptions{Package: p}); err != nil {
			return err
		}
	}
	return nil
})

// setup parses the rack and makes its simulated chip under a name of the
// test's own; the placement maps the rack's chip to it.
func setup(t *testing.T) (*fixtures.Rack, dut.Placement) {
	t.Helper()
	if err := buildOnce(); err != nil {
		t.Fatal(err)
	}
	r, err := fixtures.ParseRack("t.yaml", []byte(testRack))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("dut-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chip.Remove() })
	// A domain of the test's own, within the middleware's 32 bytes.
	domain := fmt.Sprintf("duttest%d-%d", os.Getpid(), domains.Add(1))
	duttest.RemoveSegmentsAtEnd(t, domain)
	pl := dut.Placement{Domain: domain,
		Chip: func(c gpio.Chip) gpio.Chip {
			if c == "sim:t" {
				return gpio.Chip("sim:" + name)
			}
			return c
		}}
	return r, pl
}

func start(t *testing.T, r *fixtures.Rack, name string, pl dut.Placement, args ...string) *dut.Program {
	t.Helper()
	p, err := dut.Start(t.Context(), r, name, pl, &dut.Options{Args: args, OutputDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return p
}

// The stall is caught: every tenth message the program stalls 5 ms
// before it answers, past the 4 ms deadline, so at least a tenth of the
// stimuli it received are missed (received ≥ stimuli − missed gives
// 11·missed ≥ stimuli − 10) and the case fails its 5% miss-rate bound.
// A lower bound on a sleep is no timing assumption.
func TestStallCaught(t *testing.T) {
	r, pl := setup(t)
	p := start(t, r, "imu", pl, "-stall-every", "10")
	d, _ := r.DUT("imu")
	m, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{Usage: p.Usage})
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, p.Output())
	}
	if m.RSSBytes <= 0 || m.CPUPercent < 0 || m.UsageNote != "" {
		t.Errorf("the program's usage: CPU %g%%, RSS %d, note %q", m.CPUPercent, m.RSSBytes, m.UsageNote)
	}
	tl := m.Tally
	if tl.Answered == 0 || tl.Unknown != 0 || tl.Duplicates != 0 || tl.Answered+tl.Missed != 100 {
		t.Fatalf("tally %+v", tl)
	}
	if 11*tl.Missed < tl.Stimuli-10 || tl.Late == 0 {
		t.Errorf("%d of %d stimuli missed (%d late): the stalls were not caught", tl.Missed, tl.Stimuli, tl.Late)
	}
	c := m.Case(dut.CaseInfo{Suite: "reaction", Name: "imu", Program: p})
	ck := c.Checks[len(c.Checks)-1]
	if c.Verdict != report.Fail || ck.Bound != "miss rate" || ck.Verdict != report.Fail {
		t.Errorf("verdict %s, checks %v: the stall must break the miss rate", c.Verdict, c.Checks)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "hlr dut-imu stall 5ms seq=") {
		t.Errorf("the failed case's notes do not quote the program's stall lines: %q", c.Notes)
	}
}

// The GPIO-only program answers every edge no sooner than its delay after
// it, on the wire (ground truth) and as the rig sees it (software).
func TestGPIOGroundTruth(t *testing.T) {
	r, pl := setup(t)
	start(t, r, "edge", pl)
	d, _ := r.DUT("edge")
	m, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.GroundTruth) == 0 || m.Tally.Answered == 0 {
		t.Fatalf("ground truth %d pairs, tally %+v", len(m.GroundTruth), m.Tally)
	}
	// A response edge is paired with the stimulus edge it follows (next):
	// one answered later than the next stimulus is paired with that one,
	// so single pairs may be short; the medians are the program's delay
	// at least.
	if g := c50(m.GroundTruth); g < int64(300*time.Microsecond) {
		t.Errorf("ground truth p50 %s, below the program's 300µs delay", time.Duration(g))
	}
	if s := c50(m.Tally.Samples); s < int64(300*time.Microsecond) {
		t.Errorf("software p50 %s, below the program's 300µs delay", time.Duration(s))
	}
	c := m.Case(dut.CaseInfo{Suite: "reaction", Name: "edge"})
	if _, ok := c.Extra[report.ExtraDUTGroundTruthP50]; !ok || c.Verdict != report.Pass {
		t.Errorf("verdict %s, checks %v, extra %v", c.Verdict, c.Checks, c.Extra)
	}
}

// A killed program is restarted and counted, answers again, and its
// output is kept across the restart.
func TestKillRestart(t *testing.T) {
	r, pl := setup(t)
	p := start(t, r, "imu", pl)
	banner := "dut imu: dut/imu → dut/cmd"
	testkit.Eventually(t, 10*time.Second, "the first start's banner", func() bool { return strings.Contains(p.Output(), banner) })
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if !p.Exited() {
		t.Fatal("Exited after Done = false")
	}
	if err := p.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Restarts() != 1 {
		t.Errorf("Restarts = %d, want 1", p.Restarts())
	}
	d, _ := r.DUT("imu")
	m, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{Count: 20})
	if err != nil || m.Tally.Answered == 0 {
		t.Fatalf("after restart: %v, %+v", err, m)
	}
	testkit.Eventually(t, 10*time.Second, "both starts' banners in the output", func() bool {
		return strings.Count(p.Output(), banner) == 2
	})
}

// A supervised program that is killed is restarted and the crash
// recorded with its exit and output; stopping the program is no crash.
func TestSuperviseRestartsCrash(t *testing.T) {
	r, pl := setup(t)
	p := start(t, r, "imu", pl)
	testkit.Eventually(t, 10*time.Second, "the banner", func() bool { return strings.Contains(p.Output(), "dut imu: dut/imu") || p.Exited() })
	if p.Exited() {
		t.Fatalf("the program ended: %s", p.Output())
	}
	sup := p.Supervise(t.Context())
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the restart", func() bool { return len(sup.Crashes()) == 1 })
	d, _ := r.DUT("imu")
	if m, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{Count: 20}); err != nil || m.Tally.Answered == 0 {
		t.Fatalf("after the supervised restart: %v", err)
	}
	cs := sup.Stop()
	if len(cs) != 1 || cs[0].Exit != "signal: killed" || cs[0].RestartErr != "" || cs[0].RestartedMono < cs[0].DiedMono || !strings.Contains(cs[0].Output, "dut imu:") {
		t.Errorf("crashes %+v", cs)
	}
	if p.Restarts() != 1 {
		t.Errorf("Restarts = %d, want 1", p.Restarts())
	}
	m := &dut.Measurement{DUT: d, Stimuli: []int64{cs[0].DiedMono - 1, cs[0].RestartedMono + 1, cs[0].RestartedMono + 2},
		Tally: dut.Tally{MissedAt: []int{0, 1}}}
	if n := m.WindowMisses(cs); n != 2 {
		t.Errorf("WindowMisses = %d, want the 2 misses up to the first answer after the restart", n)
	}
}

func TestMeasureRefuses(t *testing.T) {
	r, pl := setup(t)
	d, _ := r.DUT("cyclone")
	if _, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{}); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "port imu: cyclonedds") {
		t.Errorf("cyclonedds port: %v, want ErrUnsupported naming the port", err)
	}
	d, _ = r.DUT("silent")
	if _, err := dut.Measure(t.Context(), d, pl, dut.MeasureOptions{ReadyTimeout: 100 * time.Millisecond}); !errors.Is(err, dut.ErrNotReady) {
		t.Errorf("silent dut: %v, want ErrNotReady", err)
	}
	p, err := dut.Start(t.Context(), r, "silent", pl, nil)
	if err != nil || p.Where() != "external" {
		t.Fatalf("external: %v, %v", p, err)
	}
	if err := p.Restart(t.Context()); !errors.Is(err, dut.ErrExternal) {
		t.Errorf("Restart of an external dut: %v, want ErrExternal", err)
	}
}

func c50(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
