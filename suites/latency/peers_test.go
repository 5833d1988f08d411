package latency_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/suites/labels"
)

// comparison collects the peer comparison's cases; AfterAll writes the
// table (peer-comparison.md in the run directory).
type comparison struct {
	mu    sync.Mutex
	cases []*report.Case
}

func (c *comparison) add(x *report.Case) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cases = append(c.cases, x)
}

// Latency over each middleware: the same one-way flows (reliable, the
// configured sizes and rates) and round trips on hilrig and on every peer
// of ginkgo.config's middlewares, hilrig measured in the same run beside
// each peer's transport class. Peer cases are reported, not judged
// against the rack's bounds (which are hilrig's); a peer losing messages
// under reliable QoS fails. A peer not installed is a skipped spec with
// the reason; one that cannot take the rack's route (docs/peers.md) too.
var _ = Describe("latency over each middleware", Ordered, ContinueOnFailure, Label(labels.Latency), func() {
	tc := harness.Context()
	env := steps.Setup(labels.Latency)
	cmp := &comparison{}

	// Per transport class: hilrig first, then the peers of that class.
	runs := steps.Beside(steps.ShmCopy, steps.UDP)
	skip := func(p steps.Path) {
		if r := steps.Unrunnable(tc, p); r != "" {
			Skip(r)
		}
	}

	// Each cell (size, rate) runs every middleware tc.Repetitions times,
	// interleaved (steps.Rep); the report calls a difference from the
	// spread between repetitions.
	for _, size := range tc.Config.PayloadSizes {
		for _, rate := range tc.Config.RatesHz {
			if rate <= 0 {
				continue
			}
			for rep := 1; rep <= tc.Repetitions; rep++ {
				for _, path := range runs {
					oneWay(tc, env, cmp, skip, path, size, rate, rep)
				}
			}
		}
	}

	for _, size := range tc.Config.PayloadSizes {
		for rep := 1; rep <= tc.Repetitions; rep++ {
			for _, path := range runs {
				roundTrip(tc, env, cmp, skip, path, size, rep)
			}
		}
	}

	AfterAll(func() {
		table := cmp.table()
		if table == "" {
			return
		}
		path := filepath.Join(tc.RunDir, "peer-comparison.md")
		Expect(os.WriteFile(path, []byte(table), 0o644)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "%s\n(written to %s)\n", table, path)
	})
})

// oneWay registers repetition rep of path's one-way case of a cell.
func oneWay(tc *harness.TestContext, env *steps.Env, cmp *comparison, skip func(steps.Path), path steps.Path, size fixtures.ByteSize, rate float64, rep int) {
	name, repIdx := steps.Rep(fmt.Sprintf("%s %s reliable %s @ %g Hz one-way", path.MiddlewareName(), path, steps.SizeName(int(size)), rate), rep, tc.Repetitions)
	n, warm, timeout := steps.FlowBudget(tc, rate)
	It(name, func(ctx SpecContext) {
		skip(path)
		if bw := float64(size) * rate; bw > steps.BandwidthCap {
			Skip(fmt.Sprintf("%s × %g Hz = %.0f MB/s exceeds the latency sweep's %.0f MB/s cap (throughput suite)", size, rate, bw/1e6, steps.BandwidthCap/1e6))
		}
		ran, err := steps.Measure(ctx, env, name, steps.Params{Path: path, Payload: int(size), RateHz: rate, Count: n, WarmUp: warm})
		if steps.NotOnRack(err) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		c := steps.AsPeerCase(ran.Case)
		c.Repetition = repIdx
		Expect(harness.Record(c)).To(Succeed())
		cmp.add(c)
		Expect(c).To(reportmatch.HaveNoLoss())
	}, SpecTimeout(timeout))
}

// roundTrip registers repetition rep of path's round-trip case of a cell.
func roundTrip(tc *harness.TestContext, env *steps.Env, cmp *comparison, skip func(steps.Path), path steps.Path, size fixtures.ByteSize, rep int) {
	name, repIdx := steps.Rep(fmt.Sprintf("%s %s reliable %s round trip", path.MiddlewareName(), path, steps.SizeName(int(size))), rep, tc.Repetitions)
	It(name, func(ctx SpecContext) {
		skip(path)
		n := RoundTrips
		if size > 64<<10 {
			n = RoundTrips / 5 // bulk payloads: copying dominates, fewer suffice
		}
		c, err := steps.RoundTrip(ctx, env, name, path, true, int(size), n)
		if steps.NotOnRack(err) {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		c = steps.AsPeerCase(c)
		c.Repetition = repIdx
		Expect(harness.Record(c)).To(Succeed())
		cmp.add(c)
		Expect(c).To(reportmatch.HaveNoLoss())
	}, SpecTimeout(5*time.Minute))
}

// table is the comparison in markdown: per kind (one-way, round trip),
// transport class, payload, rate and repetition, each middleware's p50, p99, p99.9,
// max, jitter, loss, CPU, RSS and discovery, with the ratios hilrig/peer
// (below 1: hilrig is faster), then each peer's configuration line.
func (c *comparison) table() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cases) == 0 {
		return ""
	}
	kind := func(x *report.Case) string {
		if x.Method.Kind == report.RTTHalf {
			return "round trip (RTT/2)"
		}
		return "one-way"
	}
	key := func(x *report.Case) string {
		// Each repetition's peers against hilrig's of the same
		// repetition (they ran side by side, interleaved).
		return fmt.Sprintf("%s|%s|%d|%g|%03d", kind(x), x.Transport, x.PayloadBytes, x.RateHz, x.Repetition)
	}
	base := map[string]*report.Case{}
	for _, x := range c.cases {
		if x.Middleware == rig.MiddlewareHilrig {
			base[key(x)] = x
		}
	}
	sorted := slices.Clone(c.cases)
	slices.SortStableFunc(sorted, func(a, b *report.Case) int { return strings.Compare(key(a), key(b)) })
	us := func(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e3) }
	ratio := func(h, p int64) string {
		if h <= 0 || p <= 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", float64(h)/float64(p))
	}
	var b strings.Builder
	b.WriteString("# Peer comparison (latency suite, same run)\n\n")
	b.WriteString("| kind | class | payload | rate Hz | rep | middleware | p50 µs | p99 µs | p99.9 µs | max µs | jitter µs | lost/sent | CPU % | RSS MiB | discovery ms | hilrig/peer p50 | hilrig/peer p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	notes := map[string]string{}
	for _, x := range sorted {
		s := x.Summary
		r50, r99 := "", ""
		if h := base[key(x)]; h != nil && h != x {
			r50, r99 = ratio(h.Summary.P50, s.P50), ratio(h.Summary.P99, s.P99)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %g | %d | %s | %s | %s | %s | %s | %s | %d/%d | %.0f | %.1f | %.1f | %s | %s |\n",
			kind(x), x.Transport, steps.SizeName(int(x.PayloadBytes)), x.RateHz, x.Repetition, x.Middleware,
			us(s.P50), us(s.P99), us(s.P999), us(s.Max), us(s.Jitter), x.Lost, x.Sent, x.CPUPercent,
			float64(x.RSSBytes)/(1<<20), x.Extra[report.ExtraDiscovery]/1e6, r50, r99)
		for _, n := range x.Notes {
			if strings.HasPrefix(n, "peer: ") {
				notes[string(x.Middleware)] = strings.TrimPrefix(n, "peer: ")
			}
		}
	}
	b.WriteString("\nRatios are hilrig/peer of the same kind, class, payload, rate and repetition (rep 0: the cell ran once): below 1 hilrig is faster. " +
		"Which differences are real across the repetitions: the HTML report's first screen, or `hilrig report compare --by middleware result.json`.\n\n")
	for _, mw := range slices.Sorted(func(yield func(string) bool) {
		for k := range notes {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "- **%s**: %s\n", mw, notes[mw])
	}
	return b.String()
}
