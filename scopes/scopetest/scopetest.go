// Package scopetest is the conformance test every [scopes.Scope]
// implementation passes: drivers against the simulator, and the simulator
// itself.
package scopetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

// Rig is one scope under test plus the means to drive its inputs.
type Rig struct {
	Scope scopes.Scope
	// Feed puts one marker pulse per delay (nanoseconds, sender rising →
	// receiver rising) on the channels Source and Dest and returns once
	// the instrument has seen every edge.
	Feed func(ctx context.Context, delaysNs []int64) error
	// Source and Dest are the channels Feed drives.
	Source, Dest int
	// NoCount is true when the instrument does not report a count.
	NoCount bool
	// NoPopulationLimit is true when the instrument has no population limit.
	NoPopulationLimit bool
	// NoWindow is true when the instrument neither documents nor reports
	// its statistics window (ReadStats says WindowUnknown).
	NoWindow bool
	// FeedSlackNs is how far from each requested delay a Feed that makes
	// its edges in real time may land (a marking process stamps the
	// simulated GPIO chip with its own clock read, so it cannot place an
	// edge to the nanosecond). Statistics are then checked within this
	// slack on top of the instrument tolerance. Such a Feed measures what
	// it made and returns [ErrInexactFeed] when a delay missed by more
	// (the goroutine was preempted); Run then resets the statistics and
	// feeds again, at most FeedAttempts times. 0 for an exact Feed.
	FeedSlackNs int64
	// FeedAttempts bounds the feeds per check when Feed returns
	// ErrInexactFeed (0 means 3).
	FeedAttempts int
}

// ErrInexactFeed is returned by a real-time Feed whose edges missed a
// requested delay by more than Rig.FeedSlackNs.
var ErrInexactFeed = errors.New("scopetest: feed missed the requested delays")

// feed runs r.Feed, re-arming and retrying a real-time feed that missed
// its timing.
func feed(t *testing.T, c context.Context, r Rig, delays []int64) {
	t.Helper()
	limit := r.FeedAttempts
	if limit <= 0 {
		limit = 3
	}
	for attempt := 1; ; attempt++ {
		err := r.Feed(c, delays)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrInexactFeed) || attempt >= limit {
			t.Fatalf("Feed (attempt %d): %v", attempt, err)
		}
		t.Logf("Feed attempt %d: %v; resetting and feeding again", attempt, err)
		if err := r.Scope.ResetStats(c); err != nil {
			t.Fatalf("ResetStats before feeding again: %v", err)
		}
	}
}

// Run runs the conformance suite; newRig is called once per subtest and
// must register its own cleanup with t.Cleanup.
func Run(t *testing.T, newRig func(t *testing.T) Rig) {
	t.Run("Identify", func(t *testing.T) {
		r := newRig(t)
		id, err := r.Scope.Identify(ctx(t))
		if err != nil {
			t.Fatalf("Identify: %v", err)
		}
		if id.Vendor == "" || id.Model == "" {
			t.Fatalf("Identify = %+v: vendor or model empty", id)
		}
	})
	t.Run("NotConfigured", func(t *testing.T) {
		r := newRig(t)
		if _, err := r.Scope.ReadStats(ctx(t)); !errors.Is(err, scopes.ErrNotConfigured) {
			t.Fatalf("ReadStats before ConfigureDelay: got %v, want ErrNotConfigured", err)
		}
	})
	t.Run("BadConfig", func(t *testing.T) {
		r := newRig(t)
		err := r.Scope.ConfigureDelay(ctx(t), scopes.DelayConfig{Source: 1, Dest: 1})
		if !errors.Is(err, scopes.ErrBadConfig) {
			t.Fatalf("ConfigureDelay(1→1): got %v, want ErrBadConfig", err)
		}
	})
	t.Run("DelayStats", func(t *testing.T) {
		r := newRig(t)
		c := ctx(t)
		cfg := scopes.DelayConfig{Source: r.Source, Dest: r.Dest}
		if err := r.Scope.ConfigureDelay(c, cfg); err != nil {
			t.Fatalf("ConfigureDelay: %v", err)
		}
		if err := r.Scope.ResetStats(c); err != nil {
			t.Fatalf("ResetStats: %v", err)
		}
		delays := []int64{10_000, 12_000, 14_000}
		feed(t, c, r, delays)
		st, err := r.Scope.ReadStats(c)
		if err != nil {
			t.Fatalf("ReadStats: %v", err)
		}
		want := scopes.StatsFromDelays([]float64{10e-6, 12e-6, 14e-6})
		checkClose(t, r.FeedSlackNs, "mean", st.Mean, want.Mean.V)
		checkClose(t, r.FeedSlackNs, "min", st.Min, want.Min.V)
		checkClose(t, r.FeedSlackNs, "max", st.Max, want.Max.V)
		checkClose(t, r.FeedSlackNs, "stddev", st.StdDev, want.StdDev.V)
		if f, ok := r.Scope.(scopes.DelayFetcher); ok {
			d, err := f.FetchDelays(c, nil)
			if err != nil {
				t.Fatalf("FetchDelays: %v", err)
			}
			if len(d) != len(delays) {
				t.Fatalf("FetchDelays returned %d delays %v, want %d", len(d), d, len(delays))
			}
			for i := range d {
				checkClose(t, r.FeedSlackNs, fmt.Sprintf("fetched delay %d", i), scopes.Some(d[i]), float64(delays[i])*1e-9)
			}
		}
		if r.NoCount {
			if st.Count.OK {
				t.Errorf("count = %v, want missing (instrument has none)", st.Count)
			}
		} else if !st.Count.OK || st.Count.N != 3 {
			t.Errorf("count = %v, want 3", st.Count)
		}
		// The result says what it covers.
		if r.NoWindow != (st.Window.Kind == scopes.WindowUnknown) {
			t.Errorf("window %q: NoWindow is %v", st.Window, r.NoWindow)
		}
		if st.Window.Kind == scopes.WindowFirst || st.Window.Kind == scopes.WindowLast {
			if st.Window.N < 3 {
				t.Errorf("window %q without a population limit would not hold the 3 delays fed", st.Window)
			}
		}
		if st.Snapshot == scopes.SnapshotNone {
			t.Errorf("snapshot %q: the figures of one read must come from the same acquisitions", st.Snapshot)
		}

		// No edges since the reset: no result, and an error that says so.
		if err := r.Scope.ResetStats(c); err != nil {
			t.Fatalf("ResetStats: %v", err)
		}
		st, err = r.Scope.ReadStats(c)
		if !errors.Is(err, scopes.ErrNoResult) {
			t.Fatalf("ReadStats after reset with no edges: %v (stats %v), want ErrNoResult", err, st)
		}
		if st.Mean.OK {
			t.Errorf("mean after reset = %v, want missing (no edges yet)", st.Mean)
		}
		if st.Count.OK && st.Count.N != 0 {
			t.Errorf("count after reset = %v, want 0", st.Count)
		}
	})
	t.Run("PopulationLimit", func(t *testing.T) {
		r := newRig(t)
		if r.NoPopulationLimit {
			err := r.Scope.ConfigureDelay(ctx(t), scopes.DelayConfig{Source: r.Source, Dest: r.Dest, PopulationLimit: 2})
			if !errors.Is(err, scopes.ErrNotSupported) {
				t.Fatalf("ConfigureDelay with PopulationLimit on an instrument without one: got %v, want ErrNotSupported", err)
			}
			return
		}
		c := ctx(t)
		if err := r.Scope.ConfigureDelay(c, scopes.DelayConfig{Source: r.Source, Dest: r.Dest, PopulationLimit: 2}); err != nil {
			t.Fatalf("ConfigureDelay: %v", err)
		}
		if err := r.Scope.ResetStats(c); err != nil {
			t.Fatalf("ResetStats: %v", err)
		}
		feed(t, c, r, []int64{5_000, 7_000, 100_000})
		st, err := r.Scope.ReadStats(c)
		if err != nil {
			t.Fatalf("ReadStats: %v", err)
		}
		// 5, 7, 100 µs through a window of 2: the first two or the last
		// two, as the window the scope reports says.
		switch st.Window {
		case scopes.Window{Kind: scopes.WindowFirst, N: 2}:
			checkClose(t, r.FeedSlackNs, "min (first 2)", st.Min, 5e-6)
			checkClose(t, r.FeedSlackNs, "max (first 2)", st.Max, 7e-6)
		case scopes.Window{Kind: scopes.WindowLast, N: 2}:
			checkClose(t, r.FeedSlackNs, "min (last 2)", st.Min, 7e-6)
			checkClose(t, r.FeedSlackNs, "max (last 2)", st.Max, 100e-6)
		default:
			t.Errorf("window with PopulationLimit 2 is %q, want the first or last 2 acquisitions", st.Window)
		}
		if !r.NoCount && st.Count.N != 2 {
			t.Errorf("count = %v, want 2", st.Count)
		}
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// checkClose allows 0.1 % + 1 ns (instruments print 4–6 significant
// digits) plus the feed's slack in ns.
func checkClose(t *testing.T, slackNs int64, name string, got scopes.Value, want float64) {
	t.Helper()
	if !got.OK {
		t.Errorf("%s missing, want %s", name, scopes.FormatSeconds(want))
		return
	}
	if math.Abs(got.V-want) > 1e-9+1e-3*math.Abs(want)+float64(slackNs)*1e-9 {
		t.Errorf("%s = %s, want %s", name, scopes.FormatSeconds(got.V), scopes.FormatSeconds(want))
	}
}
