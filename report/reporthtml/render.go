// Package reporthtml renders a run's result (and a soak checkpoint) as one
// self-contained HTML file: summary table with verdicts against bounds, per
// case a latency histogram and CDF (inline SVG, gonum/plot), scope-vs-software
// comparison, environment, and soak time series. The page fetches nothing
// from the network: no scripts, no fonts, no images outside the file.
package reporthtml

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"

	"github.com/hilrig/hilrig/internal/bytesize"
)

type template_HTML = template.HTML

//go:embed report.html.tmpl
var tmplFS embed.FS

var tmpl = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"ns":    report.FormatNs,
	"nsf":   func(f float64) string { return report.FormatNs(int64(math.Round(f))) },
	"optns": optNs,
	"val":   report.FormatValue,
	"bytes": fmtBytes,
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"dur":   func(d time.Duration) string { return d.Round(time.Second).String() },
	"join":  strings.Join,
	"lower": func(v report.Verdict) string { return strings.ToLower(string(v)) },
	"pct":   func(f float64) string { return fmt.Sprintf("%.1f%%", f) },
	"f1":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"ratio": report.FormatRatio,
	"title": func(r report.MiddlewareRow) string { return r.Title() },
	"kind":  report.KindName,
	"size":  report.SizeName,
	"rate":  report.RateName,
	"room": func(f float64) string {
		if math.IsInf(f, 1) {
			return "over (bound 0)"
		}
		return fmt.Sprintf("%.0f%% of bound", 100*f)
	},
}).ParseFS(tmplFS, "report.html.tmpl"))

// Input is what Render draws. Result or Soak may be nil (not both).
type Input struct {
	Title  string
	Result *report.Result
	// Soak is a checkpoint read back; SoakVerdicts are its verdicts (Judge
	// is called with the header's bounds when nil).
	Soak         *soak.Log
	SoakVerdicts *soak.Verdicts
	// Generated is the time shown as "generated at"; zero means now.
	Generated time.Time
}

type caseView struct {
	*report.Case
	ID        string
	Histogram template.HTML
	CDF       template.HTML
	Failed    map[string]bool // bound name → failed
	Line      string
	// Headroom is the case's worst check as a fraction of its bound
	// (measured/limit for upper bounds, limit/measured for lower): > 1
	// fails, near 1 is close; 0 when nothing was judged. Worst names it.
	Headroom float64
	Worst    string
	// Bus are, for a reaction case, the one-way bus cases of this run on
	// its path (report.BusOnSamePath): how much of the reaction is the bus.
	Bus []busView
}

// busView is a bus case beside a reaction: its anchor and the case.
type busView struct {
	ID string
	*report.Case
}

// suiteGroup is one suite's cases for the collapsible overview.
type suiteGroup struct {
	Name  string
	Cases []caseView
	Fails int
}

// maxWorst is how many cases the first screen lists.
const maxWorst = 10

// headroom returns the worst check of c as a fraction of its bound.
func headroom(c *report.Case) (float64, string) {
	var worst float64
	var name string
	for _, ck := range c.Checks {
		var f float64
		switch {
		case ck.Lower && ck.Measured > 0:
			f = ck.Limit / ck.Measured
		case ck.Lower:
			f = math.Inf(1)
		case ck.Limit > 0:
			f = ck.Measured / ck.Limit
		case ck.Measured > 0:
			f = math.Inf(1) // a zero bound (e.g. max_lost 0) exceeded
		}
		if f > worst || name == "" {
			worst, name = f, ck.String()
		}
	}
	return worst, name
}

type soakView struct {
	Log      *soak.Log
	Verdicts soak.Verdicts
	Plots    []template.HTML
	Span     time.Duration
	Events   []eventRow
}

type eventRow struct {
	Agent string
	soak.Event
}

type page struct {
	Title     string
	Generated time.Time
	R         *report.Result
	Verdict   report.Verdict
	Cases     []caseView
	Scope     []caseView
	Soak      *soakView
	Counts    map[string]int
	// Worst lists failing cases, then those nearest their bounds (the
	// first screen); Suites groups every case by suite.
	Worst  []caseView
	Suites []suiteGroup
	// Middlewares is the comparison of middlewares (report.CompareMiddlewares):
	// one table and one CDF chart per row; empty without a peer case.
	Middlewares []middlewareView
	// Matrix is the comparison's answer on the first screen: scenario ×
	// middleware, p50 and p99 per cell; nil without a peer case.
	Matrix *matrixView
}

// matrixView is report.MiddlewareMatrix of p50 and p99 merged cell by
// cell (both come from the same rows, so their columns agree).
type matrixView struct {
	Middlewares []string
	Rows        []matrixRowView
	// Reps is the most repetitions any cell had: 1 says the run did
	// not repeat its cells, so nothing can be called.
	Reps int
}

type matrixRowView struct {
	Title string
	ID    string // the detail section's anchor
	Cells [][2]matrixCellView
}

// matrixCellView is one statistic of one cell: its text and whether it
// is the row's best or greyed (not significantly different from hilrig).
type matrixCellView struct {
	Stat  string
	Text  string
	Best  bool
	Grey  bool
	Title string // the call and its interval, for the tooltip
}

// newMatrixView lays rows out as the first screen's matrix.
func newMatrixView(rows []report.MiddlewareRow, ids []string) *matrixView {
	if len(rows) == 0 {
		return nil
	}
	p50, p99 := report.MiddlewareMatrix(rows, report.StatP50), report.MiddlewareMatrix(rows, report.StatP99)
	v := &matrixView{}
	for _, mw := range p50.Middlewares {
		v.Middlewares = append(v.Middlewares, string(mw))
	}
	for i := range p50.Rows {
		rv := matrixRowView{Title: p50.Rows[i].Title, ID: ids[i]}
		for j := range p50.Rows[i].Cells {
			var pair [2]matrixCellView
			for k, m := range []report.Matrix{p50, p99} {
				c := m.Rows[i].Cells[j]
				v.Reps = max(v.Reps, c.Reps)
				cv := matrixCellView{Stat: m.Stat.String(), Text: "—", Best: c.Best, Grey: c.Grey}
				if c.Present {
					cv.Text = c.CellText()
				}
				switch {
				case c.Baseline:
					cv.Title = "hilrig: the reference of the row"
				case c.Versus.Lo > 0:
					cv.Title = fmt.Sprintf("hilrig/this %s %.2f, 95 %% interval %.2f–%.2f: %s", m.Stat, c.Versus.Ratio, c.Versus.Lo, c.Versus.Hi, c.Versus.Call)
				case c.Versus.Call != "":
					cv.Title = fmt.Sprintf("hilrig/this %s %.2f: %s", m.Stat, c.Versus.Ratio, c.Versus.Call)
				}
				pair[k] = cv
			}
			rv.Cells = append(rv.Cells, pair)
		}
		v.Rows = append(v.Rows, rv)
	}
	return v
}

// middlewareView is one row of the middleware comparison as drawn: the
// model's row, its entries with the case anchors, and the chart with a
// curve per middleware.
type middlewareView struct {
	report.MiddlewareRow
	ID      string
	Entries []middlewareEntryView
	CDF     template.HTML
}

type middlewareEntryView struct {
	report.MiddlewareEntry
	CaseID   string
	Baseline bool
}

// S renders statistic i (a report.Stat) across the entry's repetitions.
func (e middlewareEntryView) S(i int) string { return report.FormatRepStat(e.Stats[i]) }

// C renders hilrig's call against the entry on statistic i; "" for the
// baseline.
func (e middlewareEntryView) C(i int) string {
	if e.Calls == nil {
		return ""
	}
	return report.CallMark(e.Calls[i].Call)
}

// Grey says the entry's statistic i is not significantly different from
// hilrig's.
func (e middlewareEntryView) Grey(i int) bool {
	return e.Calls != nil && !e.Calls[i].Call.Significant()
}

// middlewareViews draws the comparison rows of r; caseIDs maps a case to
// its anchor in the page.
func middlewareViews(r *report.Result, caseIDs map[*report.Case]string) ([]middlewareView, *matrixView, error) {
	var out []middlewareView
	rows := report.CompareMiddlewares(r)
	var ids []string
	for i, row := range rows {
		v := middlewareView{MiddlewareRow: row, ID: fmt.Sprintf("mw-row-%d", i)}
		ids = append(ids, v.ID)
		var curves []cdfCurve
		for j, e := range row.Entries {
			v.Entries = append(v.Entries, middlewareEntryView{MiddlewareEntry: e, CaseID: caseIDs[e.Case], Baseline: j == row.Baseline})
			curves = append(curves, cdfCurve{name: e.Label, h: e.Case.Histogram})
		}
		// The row's title is the section's heading; the chart's own is short
		// so it fits the chart's width.
		s, err := latencyCDFs("Cumulative distribution per middleware", curves)
		if err != nil {
			return nil, nil, fmt.Errorf("reporthtml: middleware row %q: %w", row.Title(), err)
		}
		v.CDF = template.HTML(s) // generated by vgsvg, text escaped there
		out = append(out, v)
	}
	return out, newMatrixView(rows, ids), nil
}

// Render writes the report to w. It does not block beyond writing.
func Render(w io.Writer, in Input) error {
	if in.Result == nil && in.Soak == nil {
		return fmt.Errorf("reporthtml: nothing to render (no result, no soak)")
	}
	pg := page{Title: in.Title, Generated: in.Generated, R: in.Result, Counts: map[string]int{}}
	if pg.Generated.IsZero() {
		pg.Generated = time.Now()
	}
	if pg.Title == "" {
		pg.Title = "hilrig report"
	}
	if r := in.Result; r != nil {
		pg.Verdict = r.Verdict()
		for i := range r.Cases {
			c := &r.Cases[i]
			cv := caseView{Case: c, ID: fmt.Sprintf("case-%d", i), Failed: map[string]bool{}, Line: c.DistributionLine()}
			for _, ck := range c.Checks {
				if ck.Verdict == report.Fail {
					cv.Failed[ck.Bound] = true
				}
			}
			if c.Histogram != nil && c.Histogram.Count() > 0 {
				s, err := latencyHistogram(c.Histogram)
				if err != nil {
					return fmt.Errorf("reporthtml: case %q: %w", c.Key(), err)
				}
				cv.Histogram = template.HTML(s) // generated by vgsvg, text escaped there
				if s, err = latencyCDF(c.Histogram); err != nil {
					return fmt.Errorf("reporthtml: case %q: %w", c.Key(), err)
				}
				cv.CDF = template.HTML(s)
			}
			cv.Headroom, cv.Worst = headroom(c)
			if c.Failure != "" {
				cv.Worst = "failure: " + c.Failure
			}
			pg.Counts[string(c.Verdict)]++
			pg.Cases = append(pg.Cases, cv)
			if n := len(pg.Suites); n == 0 || pg.Suites[n-1].Name != c.Suite {
				pg.Suites = append(pg.Suites, suiteGroup{Name: c.Suite})
			}
			g := &pg.Suites[len(pg.Suites)-1]
			g.Cases = append(g.Cases, cv)
			if c.Verdict == report.Fail {
				g.Fails++
			}
			if c.Scope != nil {
				pg.Scope = append(pg.Scope, cv)
			}
		}
	}
	pg.Worst = worstCases(pg.Cases)
	if r := in.Result; r != nil {
		ids := map[*report.Case]string{}
		for i := range r.Cases {
			ids[&r.Cases[i]] = fmt.Sprintf("case-%d", i)
		}
		for i := range pg.Cases {
			for _, b := range report.BusOnSamePath(r, pg.Cases[i].Case) {
				pg.Cases[i].Bus = append(pg.Cases[i].Bus, busView{ID: ids[b], Case: b})
			}
		}
		mv, mx, err := middlewareViews(r, ids)
		if err != nil {
			return err
		}
		pg.Middlewares, pg.Matrix = mv, mx
	}
	if lg := in.Soak; lg != nil {
		sv := &soakView{Log: lg}
		if in.SoakVerdicts != nil {
			sv.Verdicts = *in.SoakVerdicts
		} else {
			var b soak.Bounds
			if lg.Header.Bounds != nil {
				b = *lg.Header.Bounds
			}
			sv.Verdicts = soak.Judge(lg, b)
		}
		if n := len(lg.Windows); n > 0 {
			sv.Span = lg.Windows[n-1].End.Sub(lg.Windows[0].Start)
		}
		for i := range lg.Windows {
			for _, a := range lg.Windows[i].Agents {
				for _, e := range a.Events {
					sv.Events = append(sv.Events, eventRow{Agent: a.Agent, Event: e})
				}
			}
		}
		plots, err := soakPlots(lg)
		if err != nil {
			return err
		}
		sv.Plots = plots
		pg.Soak = sv
		if pg.Verdict == "" || sv.Verdicts.Verdict == report.Fail {
			pg.Verdict = sv.Verdicts.Verdict
		}
	}
	if err := tmpl.Execute(w, pg); err != nil {
		return fmt.Errorf("reporthtml: %w", err)
	}
	return nil
}

// worstCases orders failing cases first, then by headroom (nearest to
// its bound first), and keeps the judged ones up to maxWorst (every
// failing case is kept).
func worstCases(cs []caseView) []caseView {
	var out []caseView
	for _, c := range cs {
		if c.Verdict == report.Fail || c.Headroom > 0 {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		fi, fj := out[i].Verdict == report.Fail, out[j].Verdict == report.Fail
		if fi != fj {
			return fi
		}
		return out[i].Headroom > out[j].Headroom
	})
	fails := 0
	for _, c := range out {
		if c.Verdict == report.Fail {
			fails++
		}
	}
	return out[:min(len(out), max(fails, maxWorst))]
}

func optNs(p *float64) string {
	if p == nil {
		return "missing"
	}
	return report.FormatNs(int64(math.Round(*p)))
}

func fmtBytes(b int64) string {
	if b <= 0 {
		return "—"
	}
	return bytesize.Approx(b, " ")
}
