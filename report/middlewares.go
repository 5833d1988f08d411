package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hilrig/hilrig/internal/bytesize"
	"github.com/hilrig/hilrig/internal/kind"
)

// Transport classes of the middleware comparison (issue 19, seed 000
// §3.4): a peer is only comparable with hilrig on the same class.
const (
	ClassInProcess    = kind.ClassInProcess
	ClassSharedMemory = kind.ClassSharedMemory
	ClassUDPOneHost   = kind.ClassUDPOneHost
	ClassUDPBoards    = kind.ClassUDPBoards
	// ClassUDP is a UDP case without a route (a result file written
	// before cases carried one): whether its ends shared a host is not
	// known.
	ClassUDP = kind.ClassUDP
)

// middlewareHilrig is hilrig's own middleware as cases name it.
const middlewareHilrig = kind.Hilrig

// MiddlewareRow is one cell of the comparison: one suite, method kind,
// transport class, payload, rate, reliability and subscriber count, with
// every middleware measured there side by side.
type MiddlewareRow struct {
	Suite        string
	Kind         kind.MethodKind // Method.Kind: OneWay or RTTHalf
	Class        kind.Class      // ClassSharedMemory, ClassUDPOneHost, …
	PayloadBytes int64
	RateHz       float64 // 0: as fast as possible (round trips)
	Reliability  kind.Reliability
	Subscribers  int
	// Entries are hilrig's cases first, then the peers' in the order
	// their first case appears in the result(s).
	Entries []MiddlewareEntry
	// Baseline indexes the hilrig entry the ratios are against; -1 when
	// the row has no hilrig case.
	Baseline int
}

// MiddlewareEntry is one middleware's case in a row.
type MiddlewareEntry struct {
	// Middleware is the case's middleware ("hilrig" for an empty one).
	Middleware kind.Middleware
	// Label names the entry in tables and plot legends: the middleware,
	// plus the transport when the row has several, plus the run when the
	// comparison spans several results.
	Label string
	// Run indexes the result the case came from (CompareMiddlewares'
	// arguments).
	Run int
	// Case is the entry's first repetition (its only case when the cell
	// ran once): the one tables link and plots draw.
	Case *Case
	// Reps are every repetition of the entry's case in the cell, in
	// repetition order (Case.Repetition); one case when it ran once.
	Reps []*Case
	// Stats are the judged statistics across Reps, indexed by Stat:
	// median, spread and sample count per statistic.
	Stats []RepStat
	// Calls are hilrig's statistic against this entry's across the
	// repetitions, indexed by Stat (ratio of medians, 95 % interval,
	// faster/slower/indistinguishable/too few repetitions); nil for the
	// baseline and in rows without hilrig.
	Calls []RatioCI
	// Lost and Sent are summed over Reps.
	Lost, Sent int64
	// DiscoveryNs is the wait for the first matched reader (Extra
	// "discovery_ns"); HasDiscovery is false when the case has none
	// (hilrig's own endpoints need no discovery wait).
	DiscoveryNs  float64
	HasDiscovery bool
	// Config is the peer's version, configuration and real transport
	// (its first "peer: " note), empty for hilrig.
	Config string
	// Ratio is hilrig's figure over this entry's, medians over the
	// repetitions (below 1: hilrig is lower, i.e. faster or cheaper);
	// zero for the baseline itself and for rows without hilrig.
	Ratio Ratios
}

// Confidence is the confidence at which the comparison calls a ratio
// faster or slower.
const Confidence = 0.95

// Ratios are hilrig/peer of each statistic; a statistic either side did
// not measure (zero) has ratio 0, printed as blank.
type Ratios struct {
	P50, P99, P999, Max, Jitter, CPU, RSS float64
}

// TransportClass is the comparison class of c: its route's class as the
// rig decided it (shared memory, in-process, UDP on one host or between
// boards). A case without a route (a result written before cases carried
// one) is classed by its transport alone, and a UDP one is then ClassUDP:
// the report does not guess from the method's prose where its ends ran.
func TransportClass(c *Case) kind.Class {
	if c.Route != nil && c.Route.Class != "" {
		return c.Route.Class
	}
	t := c.Transport
	switch {
	case t == "intra":
		return ClassInProcess
	case strings.HasPrefix(t, "shm"):
		return ClassSharedMemory
	case strings.HasPrefix(t, "udp"):
		return ClassUDP
	}
	return kind.Class(t)
}

// CompareMiddlewares groups the cases of rs into comparison rows (one per
// suite, method kind, transport class, payload, rate, reliability and
// subscriber count) and keeps the rows where at least one peer
// middleware (not hilrig) was measured. In each row the baseline is the
// hilrig case on the peers' transport, preferring one named after its
// middleware (the comparison's own, measured beside the peers) over
// another sweep's; every other entry gets the ratios baseline/entry. With
// several results, entries are labelled with their run: ratios across
// runs compare different moments of a shared machine, so prefer one run.
//
// The repetitions of one case (Case.Repetition > 0, named RepName) form
// one entry: its statistics are medians over them with their spread, and
// each ratio carries the call of CompareRepetitions at Confidence. A case
// that ran once is an entry of one repetition: its ratios are as before,
// and its calls are CallTooFew.
func CompareMiddlewares(rs ...*Result) []MiddlewareRow {
	type key struct {
		suite   string
		kind    kind.MethodKind
		class   kind.Class
		rel     kind.Reliability
		payload int64
		rate    float64
		subs    int
	}
	// entryKey groups the repetitions of one case of one run; a case
	// that ran once is its own entry (solo), as before repetitions.
	type entryKey struct {
		row, run  int
		mw        kind.Middleware
		transport string
		name      string
		solo      int
	}
	var rows []MiddlewareRow
	idx := map[key]int{}
	entries := map[entryKey][2]int{} // row, entry index
	for ri, r := range rs {
		for i := range r.Cases {
			c := &r.Cases[i]
			cl := TransportClass(c)
			k := key{c.Suite, c.Method.Kind, cl, c.Reliability, c.PayloadBytes, c.RateHz, c.Subscribers}
			j, ok := idx[k]
			if !ok {
				j = len(rows)
				idx[k] = j
				rows = append(rows, MiddlewareRow{Suite: c.Suite, Kind: c.Method.Kind, Class: cl, PayloadBytes: c.PayloadBytes,
					RateHz: c.RateHz, Reliability: c.Reliability, Subscribers: c.Subscribers, Baseline: -1})
			}
			ek := entryKey{row: j, run: ri, mw: c.Middleware.Name(), transport: c.Transport, name: baseName(c)}
			if c.Repetition <= 0 {
				ek.solo = i + 1
			}
			if at, ok := entries[ek]; ok {
				e := &rows[at[0]].Entries[at[1]]
				e.Reps = append(e.Reps, c)
				continue
			}
			entries[ek] = [2]int{j, len(rows[j].Entries)}
			e := MiddlewareEntry{Middleware: c.Middleware.Name(), Run: ri, Case: c, Reps: []*Case{c}}
			if d, ok := c.Extra[ExtraDiscovery]; ok {
				e.DiscoveryNs, e.HasDiscovery = d, true
			}
			// The first "peer: " note is the configuration the agent
			// reported (suites/internal/steps writes it when it builds
			// the case); later ones are the suite's remarks on the peer.
			for _, n := range c.Notes {
				if s, ok := strings.CutPrefix(n, "peer: "); ok {
					e.Config = s
					break
				}
			}
			rows[j].Entries = append(rows[j].Entries, e)
		}
	}
	out := rows[:0]
	for _, row := range rows {
		if !slices.ContainsFunc(row.Entries, func(e MiddlewareEntry) bool { return e.Middleware != middlewareHilrig }) {
			continue
		}
		row.finish(len(rs) > 1)
		out = append(out, row)
	}
	return out
}

// finish orders the entries (hilrig first, stable otherwise), labels
// them, picks the baseline and computes the ratios.
func (row *MiddlewareRow) finish(manyRuns bool) {
	es := row.Entries
	slices.SortStableFunc(es, func(a, b MiddlewareEntry) int {
		ha, hb := a.Middleware == middlewareHilrig, b.Middleware == middlewareHilrig
		switch {
		case ha && !hb:
			return -1
		case hb && !ha:
			return 1
		}
		return 0
	})
	// The peers' transport: the one their cases ran on (the suites give
	// a peer the transport of its class, e.g. shm-copy).
	peerTransport := ""
	for _, e := range es {
		if e.Middleware != middlewareHilrig {
			peerTransport = e.Case.Transport
			break
		}
	}
	row.Baseline = -1
	best := -1
	for i, e := range es {
		if e.Middleware != middlewareHilrig {
			continue
		}
		score := 0
		if e.Case.Transport == peerTransport {
			score += 2
		}
		if strings.HasPrefix(e.Case.Name, string(middlewareHilrig)+" ") {
			score++
		}
		if score > best {
			best, row.Baseline = score, i
		}
	}
	transports := map[string]bool{}
	count := map[string]int{}
	for _, e := range es {
		transports[e.Case.Transport] = true
	}
	for i := range es {
		es[i].summarise()
	}
	for i := range es {
		e := &es[i]
		e.Label = string(e.Middleware)
		if len(transports) > 1 && e.Middleware == middlewareHilrig {
			e.Label += " " + e.Case.Transport
		}
		if manyRuns {
			e.Label += fmt.Sprintf(" [run %d]", e.Run+1)
		}
		count[e.Label]++
		if n := count[e.Label]; n > 1 {
			e.Label += fmt.Sprintf(" #%d", n)
		}
		if row.Baseline >= 0 && i != row.Baseline {
			e.Ratio, e.Calls = ratios(&es[row.Baseline], e)
		}
	}
}

// summarise orders e's repetitions and computes its statistics across
// them.
func (e *MiddlewareEntry) summarise() {
	slices.SortStableFunc(e.Reps, func(a, b *Case) int { return a.Repetition - b.Repetition })
	e.Case = e.Reps[0]
	e.Stats = make([]RepStat, numStats)
	n := make([]int64, len(e.Reps))
	v := make([]float64, len(e.Reps))
	e.Lost, e.Sent = 0, 0
	for i, c := range e.Reps {
		n[i] = c.Summary.Count
		e.Lost += c.Lost
		e.Sent += c.Sent
	}
	for _, st := range Stats {
		for i, c := range e.Reps {
			v[i] = st.Of(c.Summary)
		}
		e.Stats[st] = RepStatOf(st, v, n)
	}
}

// values are the per-repetition values of st (or of CPU, RSS) in e.
func (e *MiddlewareEntry) values(f func(*Case) float64) []float64 {
	out := make([]float64, len(e.Reps))
	for i, c := range e.Reps {
		out[i] = f(c)
	}
	return out
}

func ratios(h, p *MiddlewareEntry) (Ratios, []RatioCI) {
	calls := make([]RatioCI, numStats)
	for _, st := range Stats {
		f := func(c *Case) float64 { return st.Of(c.Summary) }
		calls[st] = CompareRepetitions(h.values(f), p.values(f), Confidence)
	}
	cpu := func(c *Case) float64 { return c.CPUPercent }
	rss := func(c *Case) float64 { return float64(c.RSSBytes) }
	return Ratios{
		P50: calls[StatP50].Ratio, P99: calls[StatP99].Ratio, P999: calls[StatP999].Ratio, Max: calls[StatMax].Ratio,
		Jitter: calls[StatJitter].Ratio,
		CPU:    CompareRepetitions(h.values(cpu), p.values(cpu), Confidence).Ratio,
		RSS:    CompareRepetitions(h.values(rss), p.values(rss), Confidence).Ratio,
	}, calls
}

// KindName renders a method kind for tables: "one-way", "RTT/2".
func KindName(k kind.MethodKind) string {
	if k == RTTHalf {
		return "RTT/2"
	}
	if k == "" {
		return "method unknown"
	}
	return string(k)
}

// RateName renders a row's rate: "1000 Hz", or "max" for 0 (round trips
// and saturation run as fast as they can).
func RateName(hz float64) string {
	if hz <= 0 {
		return "max"
	}
	return fmt.Sprintf("%g Hz", hz)
}

// Title names the row: "latency · one-way · shared memory · 64 B · 1000 Hz · reliable".
func (row *MiddlewareRow) Title() string {
	parts := []string{row.Suite, KindName(row.Kind), string(row.Class), SizeName(row.PayloadBytes), RateName(row.RateHz)}
	if row.Reliability != "" {
		parts = append(parts, string(row.Reliability))
	}
	if row.Subscribers > 1 {
		parts = append(parts, fmt.Sprintf("%d subscribers", row.Subscribers))
	}
	return strings.Join(parts, " · ")
}

// SizeName renders a payload: "64 B", "4 KiB", "1 MiB" (exact
// multiples only, so 1000 B stays "1000 B").
func SizeName(n int64) string { return bytesize.Exact(n, " ") }

// FormatRatio renders a ratio with two decimals, blank when not computable.
func FormatRatio(r float64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", r)
}

// WriteMiddlewareTable prints rows as aligned text: first the answer in
// two matrices (MiddlewareMatrix of p50 and p99: scenario × middleware,
// the best marked, each difference called), then per row a title line
// and one line per middleware with p50, p99, p99.9, max and jitter
// (medians over the repetitions, with [min–max] when there are several),
// lost/sent, CPU, RSS, discovery and the ratios hilrig/entry of p50, p99,
// p99.9 and max with their call (below 1: hilrig is faster), then each
// peer's configuration.
func WriteMiddlewareTable(w io.Writer, rows []MiddlewareRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no case of a peer middleware in the result(s): nothing to compare")
		return err
	}
	for _, st := range []Stat{StatP50, StatP99} {
		if err := WriteMatrix(w, MiddlewareMatrix(rows, st)); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	configs := map[kind.Middleware]string{}
	var order []kind.Middleware
	for _, row := range rows {
		fmt.Fprintf(tw, "\n%s\n", row.Title())
		fmt.Fprintln(tw, "  MIDDLEWARE\tREPS\tP50\tP99\tP99.9\tMAX\tJITTER\tLOST/SENT\tCPU\tRSS\tDISCOVERY\tHILRIG/X P50\tHILRIG/X P99\tHILRIG/X P99.9\tHILRIG/X MAX")
		for i, e := range row.Entries {
			c := e.Case
			disc := "-"
			if e.HasDiscovery {
				disc = FormatNs(int64(e.DiscoveryNs))
			}
			cpu, rss := "-", "-"
			if c.CPUPercent > 0 {
				cpu = fmt.Sprintf("%.1f%%", c.CPUPercent)
			}
			if c.RSSBytes > 0 {
				rss = fmt.Sprintf("%.1fMiB", float64(c.RSSBytes)/(1<<20))
			}
			rc := func(st Stat, r float64) string {
				if i == row.Baseline {
					return "(base)"
				}
				s := FormatRatio(r)
				if s != "" && e.Calls != nil {
					s += " " + CallMark(e.Calls[st].Call)
				}
				return s
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Label, len(e.Reps),
				FormatRepStat(e.Stats[StatP50]), FormatRepStat(e.Stats[StatP99]), FormatRepStat(e.Stats[StatP999]), FormatRepStat(e.Stats[StatMax]),
				FormatRepStat(e.Stats[StatJitter]), e.Lost, e.Sent, cpu, rss, disc,
				rc(StatP50, e.Ratio.P50), rc(StatP99, e.Ratio.P99), rc(StatP999, e.Ratio.P999), rc(StatMax, e.Ratio.Max))
			if e.Config != "" {
				if _, ok := configs[e.Middleware]; !ok {
					order = append(order, e.Middleware)
				}
				configs[e.Middleware] = e.Config
			}
		}
	}
	fmt.Fprintln(tw, "\nratios are hilrig/middleware of the same row, medians over the repetitions: below 1 hilrig is lower (faster).")
	for _, mw := range order {
		fmt.Fprintf(tw, "%s: %s\n", mw, configs[mw])
	}
	return tw.Flush()
}

// FormatRepStat renders a statistic across repetitions: the median, its
// [min–max] when there are several repetitions, and "(from N samples)"
// when the percentile is only indicative.
func FormatRepStat(rs RepStat) string {
	if rs.Reps == 0 {
		return FormatNs(0)
	}
	s := FormatNs(int64(rs.Median))
	if rs.Reps > 1 {
		s += fmt.Sprintf(" [%s–%s]", FormatNs(int64(rs.Min)), FormatNs(int64(rs.Max)))
	}
	if rs.Indicative {
		s += fmt.Sprintf(" (from %d samples)", rs.Samples)
	}
	return s
}
