package scopecli_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// startPulses starts a simulator fed 1 kHz pulses, 40 µs delay and 5 µs
// of jitter, closed at the end of the test.
func startPulses(t *testing.T, d scopesim.Dialect) *scopesim.Server {
	t.Helper()
	g := scopesim.NewPulseGen(time.Millisecond, 40*time.Microsecond, 5*time.Microsecond)
	srv, err := scopesim.Start(t.Context(), scopesim.Config{Dialect: d,
		Channels: map[int]scopesim.EdgeSource{1: g.Sender(), 2: g.Receiver()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// Issue 36, finding 2: another client resets the statistics halfway
// through a 1 s measure. Before, measure printed the count of the last
// half and exited 0 (count 485–498 of about 1,000); it now reads the
// statistics along the way and fails with ErrStatsReset, printing no
// figure.
func TestMeasureNoticesResetByOtherClient(t *testing.T) {
	for _, tc := range []struct {
		d     scopesim.Dialect
		reset string // the dialect's reset command, as the driver sends it
	}{{scopesim.Keysight, ":MEASure:STATistics:RESet"}, {scopesim.Tek, "CLEAR"}, {scopesim.Siglent, ":MEASure:ADVanced:STATistics:RESet"}} {
		t.Run(tc.d.String(), func(t *testing.T) {
			srv := startPulses(t, tc.d)
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			wg.Add(1)
			// The other client: once the measurement has reset and seen
			// 1000 sender edges (500 pulses, after two of measure's
			// reads), reset it (polled, not timed).
			go func() {
				defer wg.Done()
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					if strings.Contains(strings.Join(srv.Commands(), "\n"), tc.reset) && srv.EdgeCount(1) >= 1000 {
						srv.ResetByOtherClient()
						return
					}
				}
			}()
			out, _, err := run(t.Context(), "measure", "--driver", tc.d.String(), "--addr", srv.Addr(), "--duration", "1s")
			cancel()
			wg.Wait()
			if !errors.Is(err, scopes.ErrStatsReset) {
				t.Fatalf("measure with a reset by another client halfway: err %v, want ErrStatsReset; output:\n%s", err, out)
			}
			if strings.Contains(out, "mean") {
				t.Fatalf("a refused measurement printed figures:\n%s", out)
			}
			t.Log(err)
		})
	}
}

// Issue 36, finding 3: on a slow link the reset and the read take as long
// as the measurement, so the figures cover more than --duration. measure
// now prints the time they cover beside the count, and the count of 1 kHz
// pulses lies within it.
func TestMeasureReportsTimeCovered(t *testing.T) {
	re := regexp.MustCompile(`over (\S+)–(\S+) since the reset \(asked --duration 300ms\)`)
	cnt := regexp.MustCompile(`(?m)^count  (\d+)$`)
	for _, d := range []scopesim.Dialect{scopesim.Keysight, scopesim.Rigol} {
		t.Run(d.String(), func(t *testing.T) {
			srv := startPulses(t, d)
			srv.SetSlowReplies(100 * time.Millisecond)
			out, _, err := run(t.Context(), "measure", "--driver", d.String(), "--addr", srv.Addr(), "--duration", "300ms")
			if err != nil {
				t.Fatalf("measure: %v\n%s", err, out)
			}
			m, c := re.FindStringSubmatch(out), cnt.FindStringSubmatch(out)
			if m == nil || c == nil {
				t.Fatalf("measure output does not say the time covered beside the count:\n%s", out)
			}
			lo, err1 := time.ParseDuration(m[1])
			hi, err2 := time.ParseDuration(m[2])
			n, err3 := strconv.Atoi(c[1])
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			if lo < 300*time.Millisecond || hi < lo {
				t.Fatalf("covered %v–%v for --duration 300ms:\n%s", lo, hi, out)
			}
			// 1 kHz: n pulses take about n ms; the frozen reads stop
			// acquisition for a while, so only the upper bound is firm.
			if took := time.Duration(n) * time.Millisecond; took > hi+50*time.Millisecond {
				t.Fatalf("count %d (≈%v of pulses) beyond the %v–%v the figures cover:\n%s", n, took, lo, hi, out)
			}
			t.Logf("count %d over %v–%v", n, lo, hi)
		})
	}
}
