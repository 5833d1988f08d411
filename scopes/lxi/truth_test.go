package lxi_test

import (
	"math"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// Issue 36, finding 4: three 50 µs delays in a 3 ms record. Without
// :WAVeform:POINts the instrument sends 1000 buckets across the screen
// (3.3 µs each) and FetchDelays read 51 µs; each delay must now be within
// 0.1 % of 50 µs and the resolution it came with must say so.
func TestKeysightFetchDelaysResolution(t *testing.T) {
	r := startSim(t, scopesim.Keysight, "")
	ks, err := lxi.DialKeysight(t.Context(), lxi.Options{Addr: r.srv.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ks.Close() })
	if err := ks.ConfigureDelay(t.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		t.Fatal(err)
	}
	if err := ks.ResetStats(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.feed(t.Context(), []int64{50_000, 50_000, 50_000}); err != nil {
		t.Fatal(err)
	}
	d, err := ks.FetchDelays(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 3 {
		t.Fatalf("FetchDelays = %v, want 3 delays", d)
	}
	for i, v := range d {
		if math.Abs(v-50e-6) > scopes.FineResolution*50e-6 {
			t.Errorf("delay %d = %s, want 50µs within 0.1 %%", i, scopes.FormatSeconds(v))
		}
	}
	if res := ks.DelayResolution(); res <= 0 || res > scopes.FineResolution*50e-6 {
		t.Errorf("DelayResolution = %s, want > 0 and ≤ 50ns", scopes.FormatSeconds(res))
	}
}
