package reporthtml

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/trend"
)

//go:embed trend.html.tmpl
var trendFS embed.FS

var trendTmpl = template.Must(template.New("trend.html.tmpl").Funcs(template.FuncMap{
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") },
	"metric": func(m string, v float64) string {
		if m == "loss" {
			return fmt.Sprintf("%.3g%%", 100*v)
		}
		return report.FormatNs(int64(math.Round(v)))
	},
	"shift": func(c trend.Change) string { return fmt.Sprintf("%+.0f%%", 100*c.Shift()) },
}).ParseFS(trendFS, "trend.html.tmpl"))

// TrendInput is what RenderTrend draws.
type TrendInput struct {
	Title  string
	Series []trend.Series
	Params trend.Params
	// Generated is the time shown as "generated at"; zero means now.
	Generated time.Time
}

type trendView struct {
	*trend.Series
	ID   string
	Plot template.HTML
	Last string
}

// RenderTrend writes the trend page: per case a plot of p50, p99 and max
// across runs (x: run number, oldest first) with the flagged change
// points circled, and the table of change points with the run and
// revision that introduced each. Cases with a regression come first.
// Self-contained like Render: no scripts, nothing fetched.
func RenderTrend(w io.Writer, in TrendInput) error {
	if in.Generated.IsZero() {
		in.Generated = time.Now()
	}
	var views, rest []trendView
	regs := 0
	for i := range in.Series {
		s := &in.Series[i]
		svg, err := trendPlot(s)
		if err != nil {
			return err
		}
		v := trendView{Series: s, ID: fmt.Sprintf("trend-%d", i), Plot: template.HTML(svg)}
		if n := len(s.Regressions()); n > 0 {
			regs += n
			views = append(views, v)
		} else {
			rest = append(rest, v)
		}
	}
	views = append(views, rest...)
	return trendTmpl.Execute(w, map[string]any{"Title": in.Title, "Series": views, "Params": in.Params.String(),
		"Generated": in.Generated, "Regressions": regs})
}

func trendPlot(s *trend.Series) (string, error) {
	p := plot.New()
	p.Title.Text = s.Key
	p.X.Label.Text = "run (oldest first)"
	p.Y.Label.Text = "latency"
	p.Y.Tick.Marker = nsTicks{}
	p.Legend.Top = true
	for i, m := range []string{"p50", "p99", "max"} {
		xy := make(plotter.XYs, len(s.Points))
		for k := range s.Points {
			xy[k] = plotter.XY{X: float64(k + 1), Y: trend.Value(s.Points[k], m)}
		}
		l, err := plotter.NewLine(decimate(xy))
		if err != nil {
			return "", fmt.Errorf("reporthtml: trend %s: %w", s.Key, err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(m, l)
	}
	var flagged plotter.XYs
	for _, c := range s.Changes {
		if c.Metric == "loss" {
			continue // not on the latency axis; listed in the table
		}
		flagged = append(flagged, plotter.XY{X: float64(c.Index + 1), Y: trend.Value(s.Points[c.Index], c.Metric)})
	}
	if len(flagged) > 0 {
		sc, err := plotter.NewScatter(flagged)
		if err != nil {
			return "", fmt.Errorf("reporthtml: trend %s: %w", s.Key, err)
		}
		sc.GlyphStyle.Shape = draw.RingGlyph{}
		sc.GlyphStyle.Color = palette[1]
		sc.GlyphStyle.Radius = vg.Points(5)
		p.Add(sc)
		p.Legend.Add("change point", sc)
	}
	p.Add(plotter.NewGrid())
	return svgOf(p, 18*vg.Centimeter, 7*vg.Centimeter)
}
