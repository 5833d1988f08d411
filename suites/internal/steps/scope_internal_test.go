package steps

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// simScope is a Scope on the Tektronix dialect of the simulator, fed
// two pulses of 2 and 4 µs.
func simScope(t *testing.T) (*Scope, *scopesim.Server) {
	t.Helper()
	ch1, ch2 := scopesim.NewMemSource(), scopesim.NewMemSource()
	srv, err := scopesim.Start(t.Context(), scopesim.Config{Channels: map[int]scopesim.EdgeSource{1: ch1, 2: ch2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	inst, err := lxi.Open(t.Context(), lxi.Options{Driver: "tek", Addr: srv.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	s := &Scope{Instrument: inst, Driver: "tek", Addr: srv.Addr(), Sim: true}
	if s.Identity, err = inst.Identify(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Arm(t.Context(), 1, 2, 0); err != nil {
		t.Fatal(err)
	}
	i := 0
	snd, rcv := scopesim.Pulses(2, 1_000_000, 1_000_000, 1_000, func(int) int64 { i++; return int64(2000 * i) })
	ch1.Push(snd...)
	ch2.Push(rcv...)
	testkit.Eventually(t, 5*time.Second, "the simulator takes the edges", func() bool {
		return srv.EdgeCount(1) >= len(snd) && srv.EdgeCount(2) >= len(rcv)
	})
	return s, srv
}

// Issue 36: a scope case whose reading was refused — implausible
// figures, statistics reset by another client between reads — is
// recorded failing with the reason and no number; a good reading is the
// comparison it was.
func TestScopeReadingRefusedCarriesReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	t.Run("implausible", func(t *testing.T) {
		s, srv := simScope(t)
		srv.SetStatsFault(scopesim.StatsWrongUnits)
		c := &report.Case{Name: "scope case"}
		if _, err := s.Reading(ctx, c, 1, 2, 2); err != nil {
			t.Fatal(err)
		}
		checkRefused(t, c, "implausible reading refused", "span the timebase shows")
	})
	t.Run("reset by another client", func(t *testing.T) {
		s, srv := simScope(t)
		var means atomic.Int32
		srv.OnQuery(func(cmd string) {
			if strings.HasSuffix(cmd, ":MEAN?") && means.Add(1) == 2 {
				srv.ResetByOtherClient() // between Settle's first and second read
			}
		})
		c := &report.Case{Name: "scope case"}
		if _, err := s.Reading(ctx, c, 1, 2, 1000); err != nil {
			t.Fatal(err)
		}
		checkRefused(t, c, "statistics reset during the measurement", "count went backwards from 2 to 0")
	})
	t.Run("good", func(t *testing.T) {
		s, _ := simScope(t)
		c := &report.Case{Name: "scope case"}
		if _, err := s.Reading(ctx, c, 1, 2, 2); err != nil {
			t.Fatal(err)
		}
		if c.Failure != "" || c.Scope == nil || c.Scope.Scope.MeanNs == nil || *c.Scope.Scope.MeanNs != 3000 {
			t.Fatalf("good reading: failure %q, comparison %+v", c.Failure, c.Scope)
		}
	})
}

func checkRefused(t *testing.T, c *report.Case, why ...string) {
	t.Helper()
	c.Finalize()
	for _, w := range why {
		if !strings.Contains(c.Failure, w) {
			t.Errorf("case failure %q does not say %q", c.Failure, w)
		}
	}
	st := c.Scope.Scope
	if st.MeanNs != nil || st.MinNs != nil || st.MaxNs != nil || st.StdDevNs != nil || st.Count != nil {
		t.Errorf("refused reading put numbers in the report: %s", fmt.Sprint(st.MeanNs, st.MinNs, st.MaxNs, st.StdDevNs, st.Count))
	}
	if c.Verdict != report.Fail || !strings.Contains(c.Scope.Note, why[0]) {
		t.Errorf("verdict %s, scope note %q: want a failing case saying why", c.Verdict, c.Scope.Note)
	}
}
