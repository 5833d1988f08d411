package faults_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/labels"
)

// scopeBench is a simulated scope (the instrument faults are injected into
// the simulator, never into a lab's real scope) with two marker channels
// fed from memory, and the Tektronix driver talking to it over TCP.
type scopeBench struct {
	srv      *scopesim.Server
	tx, rx   *scopesim.MemSource
	inst     lxi.Instrument
	cfg      scopes.DelayConfig
	nextTime int64
}

func newScopeBench(ctx context.Context) *scopeBench {
	GinkgoHelper()
	b := &scopeBench{tx: scopesim.NewMemSource(), rx: scopesim.NewMemSource(),
		cfg: scopes.DelayConfig{Source: 1, Dest: 2, SourceEdge: scopes.Rising, DestEdge: scopes.Rising}}
	DeferCleanup(b.tx.Close)
	DeferCleanup(b.rx.Close)
	srv, err := scopesim.Start(ctx, scopesim.Config{Dialect: scopesim.Tek, Channels: map[int]scopesim.EdgeSource{1: b.tx, 2: b.rx}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = srv.Close() }) // a spec may have closed it on purpose
	b.srv = srv
	inst, err := lxi.Open(ctx, lxi.Options{Driver: "tek", Addr: srv.Addr(), Timeout: 2 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = inst.Close() }) // after a disconnect Close reports it
	b.inst = inst
	b.nextTime = time.Now().UnixNano()
	return b
}

// measureScopeCase is one scope case: configure, reset, let n marker
// pulses with a known delay through, read the statistics. It returns the
// case (with its failure stated when the instrument misbehaved) and the
// error of the step that failed.
func (b *scopeBench) measureScopeCase(ctx context.Context, name string, n int, delay time.Duration, inject func()) (*report.Case, error) {
	c := &report.Case{Name: name, Transport: "scope", Method: report.Method{Kind: report.OneWay, Clocks: "simulated scope timebase"},
		Scope: &report.ScopeComparison{Instrument: "scopesim tek", Channels: "CH1→CH2"}}
	fail := func(step string, err error) (*report.Case, error) {
		err = fmt.Errorf("scope case %q: %s: %w", name, step, err)
		c.Failure = err.Error()
		c.Finalize()
		return c, err
	}
	if err := b.inst.ConfigureDelay(ctx, b.cfg); err != nil {
		return fail("configure delay", err)
	}
	if err := b.inst.ResetStats(ctx); err != nil {
		return fail("reset statistics", err)
	}
	tx, rx := scopesim.Pulses(n, b.nextTime, int64(time.Millisecond), int64(100*time.Microsecond), func(int) int64 { return int64(delay) })
	b.nextTime += int64(n+1) * int64(time.Millisecond)
	b.tx.Push(tx...)
	b.rx.Push(rx...)
	// The simulator ingests edges asynchronously: wait for them (a real
	// signal: its edge counter), bounded.
	deadline := time.Now().Add(5 * time.Second)
	for b.srv.EdgeCount(2) < 2*n && time.Now().Before(deadline) { // counts since the reset
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	if got := b.srv.EdgeCount(2); got < 2*n {
		return fail("marker edges", fmt.Errorf("%w: the simulator holds %d of %d receiver edges after 5 s", scopes.ErrTimeout, got, 2*n))
	}
	if inject != nil {
		inject()
	}
	st, err := b.inst.ReadStats(ctx)
	if err != nil {
		return fail("read statistics", err)
	}
	c.Scope.Scope = scopeStats(st)
	c.Delivered = int64(n)
	c.Finalize()
	return c, nil
}

func scopeStats(st scopes.Stats) report.ScopeStats {
	f := func(v scopes.Value) *float64 {
		if !v.OK {
			return nil
		}
		ns := v.V * 1e9
		return &ns
	}
	out := report.ScopeStats{MeanNs: f(st.Mean), MinNs: f(st.Min), MaxNs: f(st.Max), StdDevNs: f(st.StdDev)}
	if st.Count.OK {
		n := st.Count.N
		out.Count = &n
	}
	return out
}

var _ = Describe("instrument faults", Label(labels.Faults, labels.NeedsScope, labels.Smoke), func() {
	It("scope answers garbage or disconnects mid-run: the case fails with a clear reason, the run continues, nothing recorded is lost",
		SpecTimeout(90*time.Second), func(ctx SpecContext) {
			b := newScopeBench(ctx)

			By("a healthy case first")
			good, err := b.measureScopeCase(ctx, "scope delay 100µs (healthy)", 200, 100*time.Microsecond, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(good.Scope.Scope.MeanNs).NotTo(BeNil())
			Expect(*good.Scope.Scope.MeanNs).To(BeNumerically("~", 100e3, 1e3))
			Expect(harness.Record(good)).To(Succeed())

			By("the scope answers garbage mid-case")
			bad, err := b.measureScopeCase(ctx, "scope delay (garbage replies)", 50, 100*time.Microsecond, func() { b.srv.GarbageReplies(3) })
			Expect(err).To(MatchError(scopes.ErrGarbage), "a garbage reply is reported as such")
			Expect(bad.Verdict).To(Equal(report.Fail))
			Expect(bad.Failure).To(ContainSubstring("read statistics"))
			AddReportEntry("injected: garbage", bad.Failure)

			By("the run continues: the next case on the same connection works")
			b.srv.GarbageReplies(0)
			again, err := b.measureScopeCase(ctx, "scope delay 200µs (after garbage)", 100, 200*time.Microsecond, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(*again.Scope.Scope.MeanNs).To(BeNumerically("~", 200e3, 1e3))
			Expect(harness.Record(again)).To(Succeed())

			By("the scope has no result: the case fails saying so")
			none, err := b.measureScopeCase(ctx, "scope delay (no result)", 50, 100*time.Microsecond, func() { b.srv.SetNoMeasurement(true) })
			Expect(err).To(MatchError(scopes.ErrNoResult), "the no-result value is a failure, not a missing statistic")
			Expect(none.Verdict).To(Equal(report.Fail))
			Expect(none.Failure).To(ContainSubstring("no result"))
			AddReportEntry("injected: no result", none.Failure)
			b.srv.SetNoMeasurement(false)

			By("the scope disconnects mid-case")
			gone, err := b.measureScopeCase(ctx, "scope delay (disconnected)", 50, 100*time.Microsecond, func() { _ = b.srv.Close() })
			Expect(err).To(HaveOccurred())
			Expect(errors.Is(err, scopes.ErrTimeout) || errors.Is(err, scopes.ErrClosed) || isConnErr(err)).To(BeTrue(), "a disconnect is reported as a timeout or connection error, got: %v", err)
			Expect(gone.Verdict).To(Equal(report.Fail))
			AddReportEntry("injected: disconnect", gone.Failure)

			By("nothing recorded before the faults is lost")
			var names []string
			for _, e := range CurrentSpecReport().ReportEntries {
				names = append(names, e.Name)
			}
			Expect(names).To(ContainElements(good.Name, again.Name))
		})
})

func isConnErr(err error) bool {
	s := err.Error()
	for _, w := range []string{"connection reset", "broken pipe", "EOF", "connection refused"} {
		if contains(s, w) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
