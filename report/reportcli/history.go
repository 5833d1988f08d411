package reportcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/open"
	"github.com/hilrig/hilrig/report/trend"
)

// Options are the defaults the command takes from the run configuration
// (cmd/hilrig reads ginkgo.config; this package does not).
type Options struct {
	// Results is the configured store DSN (`results` in ginkgo.config).
	Results string
	// ReportDir is report_dir, resolved (the default SQLite file is there).
	ReportDir string
	// Version names this build (recorded with the store's schema).
	Version string
}

func (o Options) reportDir() string {
	if o.ReportDir == "" {
		return "out/report"
	}
	return o.ReportDir
}

// storeFlag adds --results to fs, defaulting to the configured DSN.
func (o Options) storeFlag(fs *flag.FlagSet) *string {
	return fs.String("results", o.Results, "results store: postgres://…, sqlite:PATH or PATH (default: ginkgo.config's results, else report_dir/results.db)")
}

func (o Options) open(ctx context.Context, dsn string) (store.Store, error) {
	s, err := open.Open(ctx, dsn, o.reportDir(), o.Version)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("%w: the results store is off (results: off); pass --results", ErrUsage)
	}
	return s, nil
}

// runImport loads result files (or every runs/*/result.json under a
// directory) into the store, with their soak windows.
func runImport(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := o.storeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: report import wants result files or report directories", ErrUsage)
	}
	var files []string
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("report import: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == "result.json" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "runs" {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("report import: %w", err)
		}
	}
	s, err := o.open(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("report import: %w", err)
	}
	defer s.Close()
	var failed int
	for _, f := range files {
		if err := importFile(ctx, s, f, stdout); err != nil {
			fmt.Fprintf(stderr, "report import: %v\n", err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("report import: %d of %d file(s) not imported into %s", failed, len(files), s.Name())
	}
	return nil
}

func importFile(ctx context.Context, s store.Store, path string, stdout io.Writer) error {
	r, err := report.ReadFile(path)
	if err != nil {
		return err
	}
	if r.Run.ID == "" && filepath.Base(path) == "result.json" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "runs" {
		r.Run.ID = filepath.Base(filepath.Dir(path)) // the harness's run directory is the run ID
	}
	k := store.KeyOf(r.Run)
	if err := s.Put(ctx, r, "import"); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	windows := 0
	if r.SoakCheckpoint != "" {
		cp := r.SoakCheckpoint
		if !filepath.IsAbs(cp) {
			cp = filepath.Join(filepath.Dir(path), cp)
		}
		lg, err := soak.Read(cp)
		if err != nil {
			return fmt.Errorf("%s: cases imported, soak windows not: %w", path, err)
		}
		if err := s.PutSoak(ctx, k, lg); err != nil {
			return fmt.Errorf("%s: cases imported, soak windows not: %w", path, err)
		}
		windows = len(lg.Windows)
	}
	fmt.Fprintf(stdout, "imported %s: run %s, %d cases, %d soak windows, into %s\n", path, k, len(r.Cases), windows, s.Name())
	return nil
}

// parseSince reads an RFC 3339 time, a date (2006-01-02) or a duration
// back from now ("30d", "72h").
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err == nil && n > 0 && fmt.Sprint(n) == d {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since %q: want 2006-01-02, RFC 3339, or a duration like 30d or 72h", s)
}

// runTrend prints per-case series with their change points (and writes
// the HTML trend page with --html).
func runTrend(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report trend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := o.storeFlag(fs)
	var f store.Filter
	fs.StringVar(&f.Case, "case", "", "cases whose suite/name contains this")
	fs.StringVar(&f.Board, "board", "", "runs with this board")
	fs.StringVar(&f.Rack, "rack", "", "runs on this rack")
	fs.StringVar(&f.Middleware, "middleware", "", "cases of this transport (prefix: shm matches shm-copy and shm-loan)")
	fs.StringVar(&f.Revision, "revision", "", "runs whose git revision starts with this")
	fs.StringVar(&f.Branch, "branch", "", "runs made on this git branch")
	fs.StringVar(&f.Tag, "tag", "", "runs at a revision carrying this git tag")
	since := fs.String("since", "", "runs since: 2006-01-02, RFC 3339, or 30d / 72h back")
	p := trend.DefaultParams
	fs.IntVar(&p.Window, "window", p.Window, "change points: runs on each side (W)")
	fs.Float64Var(&p.Alpha, "alpha", p.Alpha, "change points: two-sided significance level")
	shift := fs.String("min-shift", "5%", "change points: smallest relative change of the median")
	htmlOut := fs.String("html", "", "also write the HTML trend page here")
	all := fs.Bool("all", false, "print every case, not only those with change points")
	failOn := fs.Bool("fail-on-regression", false, "exit 3 when a regression is flagged")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: report trend takes flags only, got %q", ErrUsage, pos)
	}
	if f.Since, err = parseSince(*since, time.Now()); err != nil {
		return fmt.Errorf("%w: --%v", ErrUsage, err)
	}
	if p.MinShift, err = ParseThreshold(*shift); err != nil {
		return fmt.Errorf("%w: --min-shift: %v", ErrUsage, err)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	s, err := o.open(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("report trend: %w", err)
	}
	defer s.Close()
	pts, err := s.Points(ctx, f)
	if err != nil {
		return fmt.Errorf("report trend: %w", err)
	}
	series, err := trend.Build(pts, p)
	if err != nil {
		return fmt.Errorf("report trend: %w", err)
	}
	regs := writeTrend(stdout, series, p, s.Name(), *all)
	if *htmlOut != "" {
		title := "hilrig trend — " + s.Name()
		if err := writeAtomic(*htmlOut, func(w io.Writer) error {
			return reporthtml.RenderTrend(w, reporthtml.TrendInput{Title: title, Series: series, Params: p})
		}); err != nil {
			return fmt.Errorf("report trend: %w", err)
		}
		fmt.Fprintln(stdout, *htmlOut)
	}
	if *failOn && regs > 0 {
		return fmt.Errorf("%w: %d regression(s) flagged by %s", report.ErrRegression, regs, p)
	}
	return nil
}

func fmtMetric(m string, v float64) string {
	if m == "loss" {
		return fmt.Sprintf("%.3g%%", 100*v)
	}
	return report.FormatNs(int64(math.Round(v)))
}

// writeTrend prints the series table and returns the regressions flagged.
func writeTrend(w io.Writer, series []trend.Series, p trend.Params, name string, all bool) int {
	fmt.Fprintf(w, "trend from %s: %d case(s); change points: %s\n", name, len(series), p)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\ttransport\truns\tlast p50\tlast p99\tlast max\tlast loss\tchanges")
	regs := 0
	for i := range series {
		s := &series[i]
		if !all && len(s.Changes) == 0 {
			continue
		}
		last := s.Points[len(s.Points)-1]
		var ch []string
		for _, c := range s.Changes {
			kind := "improved"
			if c.Regression {
				kind = "REGRESSED"
				regs++
			}
			ch = append(ch, fmt.Sprintf("%s %s %s→%s (%+.0f%%) at run %s rev %s p=%.2g",
				c.Metric, kind, fmtMetric(c.Metric, c.Before), fmtMetric(c.Metric, c.After), 100*c.Shift(), c.Run, short(c.Revision), c.P))
		}
		if len(ch) == 0 {
			ch = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Key, s.Transport, len(s.Points),
			fmtMetric("p50", trend.Value(last, "p50")), fmtMetric("p99", trend.Value(last, "p99")),
			fmtMetric("max", trend.Value(last, "max")), fmtMetric("loss", trend.Value(last, "loss")), strings.Join(ch, "; "))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d regression(s) flagged\n", regs)
	return regs
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	if rev == "" {
		return "?"
	}
	return rev
}

// baseline picks the baseline run for cur from the store: spec is
// "last-pass" (the newest complete passing run on cur's rack, or --rack),
// "branch:NAME" or "tag:NAME" (the newest complete passing run made on
// that git branch, or at a revision carrying that tag, on the rack),
// "rev:PREFIX" (the newest run at that git revision) or "RACK/ID".
func baseline(ctx context.Context, s store.Store, spec, rack string, cur *report.Result) (*report.Result, error) {
	self := store.KeyOf(cur.Run)
	if rack == "" {
		rack = cur.Run.Rack
	}
	var f store.Filter
	switch {
	case spec == "last-pass":
		f = store.Filter{Rack: rack, Verdict: report.Pass, CompleteOnly: true}
	case strings.HasPrefix(spec, "branch:") && len(spec) > len("branch:"):
		f = store.Filter{Rack: rack, Branch: strings.TrimPrefix(spec, "branch:"), Verdict: report.Pass, CompleteOnly: true}
	case strings.HasPrefix(spec, "tag:") && len(spec) > len("tag:"):
		f = store.Filter{Rack: rack, Tag: strings.TrimPrefix(spec, "tag:"), Verdict: report.Pass, CompleteOnly: true}
	case strings.HasPrefix(spec, "rev:"):
		f = store.Filter{Rack: rack, Revision: strings.TrimPrefix(spec, "rev:"), CompleteOnly: true}
	case strings.Contains(spec, "/"):
		i := strings.LastIndex(spec, "/")
		return s.Load(ctx, store.RunKey{Rack: spec[:i], ID: spec[i+1:]})
	default:
		return nil, fmt.Errorf("%w: --baseline %q: want last-pass, branch:NAME, tag:NAME, rev:PREFIX or RACK/RUN-ID", ErrUsage, spec)
	}
	runs, err := s.Runs(ctx, f)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.Key != self {
			return s.Load(ctx, r.Key)
		}
	}
	return nil, fmt.Errorf("%w: no stored run matches --baseline %s on rack %q in %s", store.ErrNotFound, spec, rack, s.Name())
}
