package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hilrig/hilrig/internal/kind"
)

// Matrix is the comparison's one-screen answer (issue 37): scenario ×
// middleware for one statistic, the lowest median of each row marked and
// each peer's difference from hilrig called at Confidence.
type Matrix struct {
	Stat Stat
	// Middlewares are the columns: hilrig first, then the peers in the
	// order their first row has them.
	Middlewares []kind.Middleware
	Rows        []MatrixRow
}

// MatrixRow is one scenario (a MiddlewareRow) of the matrix.
type MatrixRow struct {
	Title string
	// Cells align with Matrix.Middlewares; a middleware the row did not
	// measure has a cell with Present false.
	Cells []MatrixCell
}

// MatrixCell is one middleware's figure in one scenario: its entry's
// statistic across repetitions (hilrig's baseline entry, or the peer's
// first entry of the row).
type MatrixCell struct {
	Present bool
	RepStat
	// Baseline: the row's hilrig entry, the others' reference.
	Baseline bool
	// Best: the lowest median of the row (ties all marked).
	Best bool
	// Versus is hilrig against this middleware (zero for the baseline).
	Versus RatioCI
	// Grey: the cell's difference from hilrig is not significant (or
	// the row has no hilrig); for the baseline, no peer of the row
	// differs significantly from it.
	Grey bool
}

// MiddlewareMatrix lays rows out as a matrix of statistic s.
func MiddlewareMatrix(rows []MiddlewareRow, s Stat) Matrix {
	m := Matrix{Stat: s}
	col := map[kind.Middleware]int{}
	pick := make([]map[kind.Middleware]int, len(rows))
	for ri, row := range rows {
		pick[ri] = map[kind.Middleware]int{}
		for i, e := range row.Entries {
			if e.Middleware == middlewareHilrig && i != row.Baseline {
				continue
			}
			if _, ok := pick[ri][e.Middleware]; ok {
				continue
			}
			pick[ri][e.Middleware] = i
			if _, ok := col[e.Middleware]; !ok {
				col[e.Middleware] = len(m.Middlewares)
				m.Middlewares = append(m.Middlewares, e.Middleware)
			}
		}
	}
	// hilrig first: the reference every peer is called against.
	if i := slices.Index(m.Middlewares, middlewareHilrig); i > 0 {
		m.Middlewares = slices.Insert(slices.Delete(m.Middlewares, i, i+1), 0, middlewareHilrig)
		for j, mw := range m.Middlewares {
			col[mw] = j
		}
	}
	for ri, row := range rows {
		mr := MatrixRow{Title: row.Title(), Cells: make([]MatrixCell, len(m.Middlewares))}
		best := 0.0
		anySig := false
		for mw, i := range pick[ri] {
			e := row.Entries[i]
			c := MatrixCell{Present: e.Stats[s].Reps > 0, RepStat: e.Stats[s], Baseline: i == row.Baseline}
			if e.Calls != nil {
				c.Versus = e.Calls[s]
			}
			c.Grey = !c.Baseline && !c.Versus.Call.Significant()
			anySig = anySig || (c.Present && !c.Baseline && c.Versus.Call.Significant())
			if c.Present && (best == 0 || c.Median < best) {
				best = c.Median
			}
			mr.Cells[col[mw]] = c
		}
		for i := range mr.Cells {
			c := &mr.Cells[i]
			c.Best = c.Present && c.Median == best
			if c.Baseline {
				c.Grey = !anySig
			}
		}
		m.Rows = append(m.Rows, mr)
	}
	return m
}

// CellText renders a cell for text tables: "*12.3µs [11.0µs–13.1µs] faster",
// "-" when absent; "*" marks the row's best, the call is hilrig's against
// the cell ("=" for the baseline), and "(from N samples)" an indicative
// percentile.
func (c MatrixCell) CellText() string {
	if !c.Present {
		return "-"
	}
	var b strings.Builder
	if c.Best {
		b.WriteString("*")
	}
	b.WriteString(FormatNs(int64(c.Median)))
	if c.Reps > 1 {
		fmt.Fprintf(&b, " [%s–%s]", FormatNs(int64(c.Min)), FormatNs(int64(c.Max)))
	}
	if c.Indicative {
		fmt.Fprintf(&b, " (from %d samples)", c.Samples)
	}
	switch {
	case c.Baseline:
		b.WriteString(" =")
	case c.Versus.Call != "":
		fmt.Fprintf(&b, " %s", CallMark(c.Versus.Call))
	}
	return b.String()
}

// CallMark renders a call in a table cell: "hilrig faster", "hilrig
// slower", "≈" (indistinguishable at Confidence) or "? (R<4)" (too few
// repetitions to call).
func CallMark(c Call) string {
	switch c {
	case CallFaster:
		return "hilrig faster"
	case CallSlower:
		return "hilrig slower"
	case CallIndistinguishable:
		return "≈"
	case CallTooFew:
		return "?"
	}
	return ""
}

// WriteMatrix prints m as aligned text, then its legend.
func WriteMatrix(w io.Writer, m Matrix) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: median over repetitions [min–max]\n", strings.ToUpper(m.Stat.String()))
	fmt.Fprint(tw, "  SCENARIO")
	for _, mw := range m.Middlewares {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(mw)))
	}
	fmt.Fprintln(tw)
	for _, r := range m.Rows {
		fmt.Fprintf(tw, "  %s", r.Title)
		for _, c := range r.Cells {
			fmt.Fprintf(tw, "\t%s", c.CellText())
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "* lowest of the row; hilrig faster/slower: significant at %.0f %% across repetitions (rank test); ≈ indistinguishable; ? too few repetitions to call (fewer than 4 a side)\n", Confidence*100)
	return err
}
