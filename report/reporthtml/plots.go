package reporthtml

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
}

// svgOf renders p as an inline <svg> element (XML prolog stripped).
func svgOf(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("reporthtml: render svg: %w", err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// usTicks labels a log axis of nanoseconds in readable units.
type nsLogTicks struct{}

func (nsLogTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if min < 1 {
		min = 1
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		v := math.Pow(10, e)
		if v >= min && v <= max {
			ts = append(ts, plot.Tick{Value: v, Label: report.FormatNs(int64(v))})
		}
		for m := 2.0; m < 10; m++ {
			if mv := m * v; mv >= min && mv <= max {
				t := plot.Tick{Value: mv}
				// Narrow ranges get intermediate labels so the axis is readable.
				if max/min < 300 && (m == 2 || m == 5) {
					t.Label = report.FormatNs(int64(mv))
				}
				ts = append(ts, t)
			}
		}
	}
	return ts
}

// latencyHistogram plots the sample counts in log-spaced bins (20 per
// decade) on a log latency axis.
func latencyHistogram(h *report.Histogram) (string, error) {
	const perDecade = 20
	counts := map[int]float64{}
	lo, hi := math.MaxInt, math.MinInt
	for _, b := range h.Buckets() {
		mid := float64(b.FromNs+b.ToNs) / 2
		if mid < 1 {
			mid = 1
		}
		k := int(math.Floor(math.Log10(mid) * perDecade))
		counts[k] += float64(b.Count)
		lo, hi = min(lo, k), max(hi, k)
	}
	if len(counts) == 0 {
		return "", nil
	}
	var bins []plotter.HistogramBin
	for k := lo; k <= hi; k++ {
		bins = append(bins, plotter.HistogramBin{Min: math.Pow(10, float64(k)/perDecade), Max: math.Pow(10, float64(k+1)/perDecade), Weight: counts[k]})
	}
	p := plot.New()
	p.Title.Text = "Latency histogram"
	p.X.Label.Text = "latency (log)"
	p.Y.Label.Text = "samples"
	p.Y.Tick.Marker = countTicks{}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = nsLogTicks{}
	hp := &plotter.Histogram{Bins: bins, Width: bins[0].Max - bins[0].Min, FillColor: palette[0], LineStyle: plotter.DefaultLineStyle}
	p.Add(hp, plotter.NewGrid())
	return svgOf(p, 14*vg.Centimeter, 8*vg.Centimeter)
}

// ninesScale maps a cumulative fraction q to −log10(1−q), so 90 %, 99 %,
// 99.9 % and 99.99 % are equally spaced and the tail is visible.
type ninesScale struct{}

func nines(q float64) float64 { return -math.Log10(1 - math.Min(q, 1-1e-7)) }

func (ninesScale) Normalize(min, max, x float64) float64 {
	a, b := nines(min), nines(max)
	if b == a {
		return 0
	}
	return (nines(x) - a) / (b - a)
}

type ninesTicks struct{}

func (ninesTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for _, q := range []struct {
		v float64
		l string
	}{{0, "0%"}, {0.5, "50%"}, {0.9, "90%"}, {0.99, "99%"}, {0.999, "99.9%"}, {0.9999, "99.99%"}, {0.99999, "99.999%"}, {0.999999, "99.9999%"}} {
		if q.v >= min && q.v <= max {
			ts = append(ts, plot.Tick{Value: q.v, Label: q.l})
		}
	}
	return ts
}

// latencyCDF plots the cumulative distribution: log latency on x, the
// fraction of samples at or below it on a "nines" y axis.
func latencyCDF(h *report.Histogram) (string, error) {
	return latencyCDFs("Cumulative distribution", []cdfCurve{{h: h}})
}

// cdfCurve is one distribution of a CDF plot; name is its legend entry
// ("" for a single curve, which needs no legend).
type cdfCurve struct {
	name string
	h    *report.Histogram
}

// cdfXY is h's CDF as plot points, starting at (first value, 0) and with
// the last point capped below 1 (it would be +∞ on the nines axis).
func cdfXY(h *report.Histogram) plotter.XYs {
	pts := h.CDF()
	if len(pts) == 0 {
		return nil
	}
	xy := make(plotter.XYs, 0, len(pts)+1)
	first := float64(pts[0].ValueNs)
	if first < 1 {
		first = 1
	}
	xy = append(xy, plotter.XY{X: first, Y: 0})
	for _, c := range pts {
		x := float64(c.ValueNs)
		if x < 1 {
			x = 1
		}
		y := c.Fraction
		if cap := 1 - 1/float64(10*h.Count()); y > cap {
			y = cap
		}
		xy = append(xy, plotter.XY{X: x, Y: y})
	}
	return xy
}

// latencyCDFs plots the CDFs of curves on one chart (log latency on x,
// nines on y), one colour per curve and a legend when there are several:
// the middleware comparison's chart per row. Curves without samples are
// left out; "" when none has any.
func latencyCDFs(title string, curves []cdfCurve) (string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency (log)"
	p.Y.Label.Text = "fraction ≤ latency"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = nsLogTicks{}
	p.Y.Scale = ninesScale{}
	p.Y.Tick.Marker = ninesTicks{}
	// Top left: a CDF never reaches high fractions at low latency, so the
	// legend covers no curve there.
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	xmax, drawn := 0.0, 0
	for i, c := range curves {
		if c.h == nil {
			continue
		}
		xy := cdfXY(c.h)
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", fmt.Errorf("reporthtml: cdf %s: %w", c.name, err)
		}
		l.Color = palette[1]
		if len(curves) > 1 {
			l.Color = palette[i%len(palette)]
			l.Dashes = dashes[(i/len(palette))%len(dashes)]
		}
		l.StepStyle = plotter.PostStep
		l.Width = vg.Points(1.5)
		p.Add(l)
		if c.name != "" {
			p.Legend.Add(c.name, l)
		}
		xmax = max(xmax, xy[len(xy)-1].X)
		drawn++
	}
	if drawn == 0 {
		return "", nil
	}
	if p.X.Max < xmax*1.1 {
		p.X.Max = xmax * 1.1
	}
	return svgOf(p, 14*vg.Centimeter, 8*vg.Centimeter)
}

// dashes tell curves apart once the palette's colours repeat.
var dashes = [][]vg.Length{nil, {vg.Points(4), vg.Points(2)}, {vg.Points(1), vg.Points(2)}}

// series is one time series for a soak plot; NaN breaks the line (a gap).
type series struct {
	name string
	xy   plotter.XYs
}

// maxPlotPoints bounds the points per series in an SVG; longer series are
// decimated by taking each bin's maximum (the worst case stays visible).
const maxPlotPoints = 1500

func decimate(xy plotter.XYs) plotter.XYs {
	if len(xy) <= maxPlotPoints {
		return xy
	}
	out := make(plotter.XYs, 0, maxPlotPoints)
	n := len(xy)
	for b := 0; b < maxPlotPoints; b++ {
		lo, hi := b*n/maxPlotPoints, (b+1)*n/maxPlotPoints
		if hi <= lo {
			continue
		}
		best := plotter.XY{X: xy[lo].X, Y: math.NaN()}
		for _, p := range xy[lo:hi] {
			if math.IsNaN(p.Y) {
				best.Y = math.NaN()
				break
			}
			if math.IsNaN(best.Y) || p.Y > best.Y {
				best.Y = p.Y
			}
		}
		out = append(out, best)
	}
	return out
}

// timeSeries plots series against hours since start; events are drawn as
// vertical marks at the bottom.
func timeSeries(title, ylabel string, ss []series, events []float64, yTicks plot.Ticker) (string, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "hours since start"
	p.Y.Label.Text = ylabel
	if yTicks != nil {
		p.Y.Tick.Marker = yTicks
	}
	p.Legend.Top = true
	any := false
	for i, s := range ss {
		pts := decimate(s.xy)
		// Split at NaN (gaps) so a resumed soak does not draw across the gap.
		var seg plotter.XYs
		first := true
		flush := func() error {
			if len(seg) == 0 {
				return nil
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return fmt.Errorf("reporthtml: %s: %w", title, err)
			}
			l.Color = palette[i%len(palette)]
			l.Width = vg.Points(1)
			p.Add(l)
			if first {
				p.Legend.Add(s.name, l)
				first = false
			}
			any = true
			seg = nil
			return nil
		}
		for _, pt := range pts {
			if math.IsNaN(pt.Y) {
				if err := flush(); err != nil {
					return "", err
				}
				continue
			}
			seg = append(seg, pt)
		}
		if err := flush(); err != nil {
			return "", err
		}
	}
	if !any {
		return "", nil
	}
	if len(events) > 0 {
		xy := make(plotter.XYs, len(events))
		for i, e := range events {
			xy[i] = plotter.XY{X: e, Y: p.Y.Min}
		}
		sc, err := plotter.NewScatter(xy)
		if err == nil {
			sc.GlyphStyle.Shape = draw.TriangleGlyph{}
			sc.GlyphStyle.Color = color.Black
			sc.GlyphStyle.Radius = vg.Points(3)
			p.Add(sc)
			p.Legend.Add("events", sc)
		}
	}
	p.Add(plotter.NewGrid())
	return svgOf(p, 20*vg.Centimeter, 8*vg.Centimeter)
}

type nsTicks struct{}

func (nsTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = report.FormatNs(int64(ts[i].Value))
		}
	}
	return ts
}

type bytesTicks struct{}

func (bytesTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmt.Sprintf("%.1f MiB", ts[i].Value/(1<<20))
		}
	}
	return ts
}

// soakPlots renders the soak time series: per stream P50/P99/max, RSS and
// PTP offset per agent.
func soakPlots(lg *soak.Log) ([]template_HTML, error) {
	t0 := lg.Header.Started
	if len(lg.Windows) > 0 && (t0.IsZero() || lg.Windows[0].Start.Before(t0)) {
		t0 = lg.Windows[0].Start
	}
	hours := func(t time.Time) float64 { return t.Sub(t0).Hours() }
	type lat struct{ p50, p99, mx plotter.XYs }
	lats := map[string]*lat{}
	rss := map[string]plotter.XYs{}
	ptp := map[string]plotter.XYs{}
	var agents []string
	var events []float64
	gapAfter := map[int]bool{}
	for _, g := range lg.Gaps {
		gapAfter[g.AfterIndex] = true
	}
	nan := math.NaN()
	for i := range lg.Windows {
		w := &lg.Windows[i]
		x := hours(w.End)
		for _, a := range w.Agents {
			if _, ok := rss[a.Agent]; !ok {
				agents = append(agents, a.Agent)
			}
			rss[a.Agent] = append(rss[a.Agent], plotter.XY{X: x, Y: float64(a.RSSBytes)})
			if a.PTP != nil {
				ptp[a.Agent] = append(ptp[a.Agent], plotter.XY{X: x, Y: float64(a.PTP.OffsetNs)})
			}
			for _, e := range a.Events {
				events = append(events, hours(e.Time))
			}
			for _, s := range a.Streams {
				k := soak.StreamKey(a.Agent, s.Stream)
				l := lats[k]
				if l == nil {
					l = &lat{}
					lats[k] = l
				}
				if s.Summary.Count == 0 || !w.Locked() {
					l.p50 = append(l.p50, plotter.XY{X: x, Y: nan})
					l.p99 = append(l.p99, plotter.XY{X: x, Y: nan})
					l.mx = append(l.mx, plotter.XY{X: x, Y: nan})
					continue
				}
				l.p50 = append(l.p50, plotter.XY{X: x, Y: float64(s.Summary.P50)})
				l.p99 = append(l.p99, plotter.XY{X: x, Y: float64(s.Summary.P99)})
				l.mx = append(l.mx, plotter.XY{X: x, Y: float64(s.Summary.Max)})
			}
		}
		if gapAfter[w.Index] {
			for _, l := range lats {
				l.p50 = append(l.p50, plotter.XY{X: x, Y: nan})
				l.p99 = append(l.p99, plotter.XY{X: x, Y: nan})
				l.mx = append(l.mx, plotter.XY{X: x, Y: nan})
			}
		}
	}
	var out []template_HTML
	for _, k := range lg.StreamKeys {
		l := lats[k]
		if l == nil {
			continue
		}
		s, err := timeSeries("Latency per window: "+k, "latency", []series{{"p50", l.p50}, {"p99", l.p99}, {"max", l.mx}}, events, nsTicks{})
		if err != nil {
			return nil, err
		}
		if s != "" {
			out = append(out, template_HTML(s))
		}
	}
	var rs, ps []series
	for _, a := range agents {
		rs = append(rs, series{a, rss[a]})
		if len(ptp[a]) > 0 {
			ps = append(ps, series{a, ptp[a]})
		}
	}
	for _, spec := range []struct {
		title, ylabel string
		ss            []series
		ticks         plot.Ticker
	}{{"RSS per agent", "RSS", rs, bytesTicks{}}, {"PTP offset from master", "offset", ps, nsTicks{}}} {
		if len(spec.ss) == 0 {
			continue
		}
		s, err := timeSeries(spec.title, spec.ylabel, spec.ss, events, spec.ticks)
		if err != nil {
			return nil, err
		}
		if s != "" {
			out = append(out, template_HTML(s))
		}
	}
	return out, nil
}

type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
		}
	}
	return ts
}
