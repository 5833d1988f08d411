package scopesim_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// The sim rack end to end: sender and receiver markers drive two lines of
// the simulated GPIO chip; the simulator's channels 1 and 2 watch them;
// the real Tektronix driver measures over a real socket; the result is
// cross-validated against the marker times taken in software.
func TestGPIOSimRackEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r := newSimRack(ctx, t, fmt.Sprintf("scopesim%d", os.Getpid()), scopesim.Tek)
	srv, ch1, ch2, snd, rcv := r.srv, r.ch1, r.ch2, r.snd, r.rcv
	tek, err := lxi.DialTek(ctx, lxi.Options{Addr: srv.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tek.Close() })
	startDelay(ctx, t, tek)

	const n = 20
	var sw []float64
	for range n {
		// The sender's edge is published before Mark returns and the
		// receiver's after rcv.Mark is called, so the wire delay is at
		// least the 200 µs spun here (a deliberate "bus latency").
		sw = append(sw, markPair(t, snd, rcv, 200*time.Microsecond))
	}
	waitEdgesBoth(t, srv, 2*n)
	st, err := tek.ReadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Count.N != n || !st.Min.OK || st.Min.V < 199e-6 {
		t.Fatalf("scope stats %v: want %d delays of at least ~200µs", st, n)
	}
	// Software stamps bracket the marker calls, so they agree with the
	// wire within the marker's own cost; 250 µs covers a preempted Mark
	// on a loaded two-core machine.
	check := scopes.CrossValidate(st, scopes.StatsFromDelays(sw), scopes.Tolerance{AbsS: 250e-6, Rel: 0.05})
	if !check.Rows[0].Compared || !check.Rows[0].Agree || !check.Rows[4].Agree {
		t.Fatalf("mean or count disagrees: %s", check.Explanation)
	}
	t.Log(check.Explanation)
	if ch1.Overflows()+ch2.Overflows() != 0 {
		t.Fatalf("watch overflowed: %d/%d", ch1.Overflows(), ch2.Overflows())
	}
	// And a software clock that lies by 1 ms is caught.
	lie := make([]float64, len(sw))
	for i, v := range sw {
		lie[i] = v + 1e-3
	}
	if c := scopes.CrossValidate(st, scopes.StatsFromDelays(lie), scopes.Tolerance{AbsS: 250e-6, Rel: 0.05}); c.Agree {
		t.Fatalf("a 1 ms software offset was not detected: %s", c.Explanation)
	}
}

// The distribution cross-check end to end on the sim rack: the Keysight
// driver fetches the per-message delays from the simulator's waveform
// records (fed by the simulated GPIO chip), and they are compared with
// the software delays of the same messages — quantiles and KS distance.
// A software side that reports the right mean but no tail is caught on
// p99.
func TestGPIOSimRackDistribution(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r := newSimRack(ctx, t, fmt.Sprintf("scopesimd%d", os.Getpid()), scopesim.Keysight)
	srv, snd, rcv := r.srv, r.snd, r.rcv
	ks, err := lxi.DialKeysight(ctx, lxi.Options{Addr: srv.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	startDelay(ctx, t, ks)

	// 200 µs "bus latency", every 10th message 1.2 ms: a tail.
	const n = 50
	var sw []float64
	for i := range n {
		lat := 200 * time.Microsecond
		if i%10 == 9 {
			lat = 1200 * time.Microsecond
		}
		sw = append(sw, markPair(t, snd, rcv, lat))
	}
	waitEdgesBoth(t, srv, 2*n)
	st, err := ks.ReadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := ks.FetchDelays(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(wire) != n {
		t.Fatalf("FetchDelays returned %d delays, want %d", len(wire), n)
	}
	tol := scopes.Tolerance{AbsS: 250e-6, Rel: 0.05}
	c := scopes.CrossValidateDelays(st, scopes.StatsFromDelays(sw), wire, sw, tol)
	if c.Distribution == nil || len(c.Rows) != 7 {
		t.Fatalf("no distribution rows: %s", c.Explanation)
	}
	if !c.Rows[0].Agree || !c.Rows[5].Agree || !c.Rows[6].Agree {
		t.Fatalf("mean, p50 or p99 disagree: %s", c.Explanation)
	}
	t.Log(c.Explanation)

	// A software side with the right mean and no tail: every message at
	// the mean. p99 (wire ≈ 1.2 ms, software ≈ 0.3 ms) must catch it.
	flat := make([]float64, n)
	for i := range flat {
		flat[i] = c.Rows[0].Software
	}
	c = scopes.CrossValidateDelays(st, scopes.StatsFromDelays(flat), wire, flat, tol)
	if c.Agree || !c.Rows[0].Agree || c.Rows[6].Agree {
		t.Fatalf("a software side without the tail was not caught on p99 (mean agreeing): %s", c.Explanation)
	}
	t.Log(c.Explanation)
}

// waitEdgesBoth waits until the simulator has seen n edges on CH1 and CH2.
// markPair marks snd, spins (no sleep: the scheduler would add its own
// latency) for lat, marks rcv and returns the software delay in
// seconds: from before snd's mark to before rcv's.
func markPair(t *testing.T, snd, rcv *gpio.Output, lat time.Duration) float64 {
	t.Helper()
	t0 := time.Now()
	if err := snd.Mark(); err != nil {
		t.Fatal(err)
	}
	for tA := time.Now(); time.Since(tA) < lat; {
	}
	t1 := time.Now()
	if err := rcv.Mark(); err != nil {
		t.Fatal(err)
	}
	return t1.Sub(t0).Seconds()
}

func waitEdgesBoth(t *testing.T, srv *scopesim.Server, n int) {
	t.Helper()
	testkit.Until(t, 5*time.Second, func() error {
		if a, b := srv.EdgeCount(1), srv.EdgeCount(2); a < n || b < n {
			return fmt.Errorf("simulator saw %d/%d edges, want %d each", a, b, n)
		}
		return nil
	})
}

// simRack is the sim rack's marker path, the test kit of the end-to-end
// tests: a simulated GPIO chip with lines MARK_TX and MARK_RX, a pulse
// marker on each (snd, rcv), and a scope simulator speaking dialect whose
// channels 1 and 2 watch them. Everything is closed (and the chip removed)
// at the test's end.
type simRack struct {
	srv      *scopesim.Server
	ch1, ch2 *scopesim.GPIOSource
	snd, rcv *gpio.Output
}

// newSimRack builds a simRack on a chip called name, in a chip directory
// of the test's own.
func newSimRack(ctx context.Context, t *testing.T, name string, dialect scopesim.Dialect) *simRack {
	t.Helper()
	t.Setenv("HILRIG_GPIOSIM_DIR", t.TempDir())
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 2, LineNames: []string{"MARK_TX", "MARK_RX"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chip.Close(); chip.Remove() })
	tx := gpio.LineSpec{Chip: kind.SimChip(name), Line: "MARK_TX"}
	rx := gpio.LineSpec{Chip: kind.SimChip(name), Line: "MARK_RX"}
	r := &simRack{}
	for _, w := range []struct {
		spec gpio.LineSpec
		ch   **scopesim.GPIOSource
	}{{tx, &r.ch1}, {rx, &r.ch2}} {
		ch, err := scopesim.WatchGPIO(ctx, w.spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ch.Close() })
		*w.ch = ch
	}
	if r.srv, err = scopesim.Start(ctx, scopesim.Config{Dialect: dialect, Channels: map[int]scopesim.EdgeSource{1: r.ch1, 2: r.ch2}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.srv.Close() })
	mode := gpio.Mode{Kind: gpio.Pulse, Width: 5 * time.Microsecond}
	for _, m := range []struct {
		spec gpio.LineSpec
		out  **gpio.Output
	}{{tx, &r.snd}, {rx, &r.rcv}} {
		o, err := gpio.Open(ctx, m.spec, mode)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		*m.out = o
	}
	return r
}

// startDelay configures the delay measurement CH1 → CH2 and resets its
// statistics.
func startDelay(ctx context.Context, t *testing.T, s interface {
	ConfigureDelay(context.Context, scopes.DelayConfig) error
	ResetStats(context.Context) error
}) {
	t.Helper()
	if err := s.ConfigureDelay(ctx, scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
}
