// Package reportcli is the logic of "hilrig report": html (regenerate the
// HTML report from a result JSON or a soak checkpoint JSONL) and compare
// (per-case deltas between two results, with a regression verdict; with
// --by middleware, the middlewares side by side within a result). The
// command file in cmd/hilrig only maps its errors to exit codes.
package reportcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/soak"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
// Regressions are reported wrapping report.ErrRegression (exit 3).
var ErrUsage = cli.ErrUsage

const usage = `usage:
  hilrig report html RESULT.json|SOAK.jsonl [-o out.html] [--soak SOAK.jsonl] [--title T]
  hilrig report compare BASE.json NEW.json [--threshold 10%] [--min-delta 0ns]
  hilrig report compare --by middleware RESULT.json [OTHER.json]
  hilrig report compare --baseline last-pass|branch:NAME|tag:NAME|rev:PREFIX|RACK/RUN-ID [--rack R] NEW.json [--results DSN]
  hilrig report import RESULT.json|REPORT_DIR... [--results DSN]
  hilrig report trend [--case C] [--board B] [--rack R] [--middleware M] [--revision REV] [--branch B] [--tag T] [--since 30d]
                      [--window 8] [--alpha 0.001] [--min-shift 5%] [--html trend.html] [--all]
                      [--fail-on-regression] [--results DSN]`

// Run runs "hilrig report <sub> ..." with no configured store (see
// RunWith). It blocks only on file I/O.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunWith(ctx, Options{}, args, stdout, stderr)
}

// RunWith runs "hilrig report <sub> ..." with the configured defaults o.
// It blocks on file and database I/O and honours ctx for the latter.
func RunWith(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) error {
	with := func(run func(context.Context, Options, []string, io.Writer, io.Writer) error) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return run(ctx, o, args, stdout, stderr)
		}
	}
	return cli.Set{Prog: "hilrig report", Usage: usage, Commands: []cli.Command{
		{Name: "html", Run: runHTML},
		{Name: "compare", Run: with(runCompare)},
		{Name: "import", Run: with(runImport)},
		{Name: "trend", Run: with(runTrend)},
	}}.Run(ctx, args, stdout, stderr)
}

// parse parses flags that may come before or after the positional args.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func runHTML(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report html", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output file (default: input with .html)")
	soakPath := fs.String("soak", "", "soak checkpoint JSONL to add (default: the result's soak_checkpoint)")
	title := fs.String("title", "", "page title")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: report html wants one input file, got %d", ErrUsage, len(pos))
	}
	in := pos[0]
	// Both readers take regular files only, each with its own cap
	// (report.MaxResultFile, soak.MaxCheckpointFile); the first line says
	// which one the file is for.
	isCheckpoint, err := soak.IsCheckpointFile(in)
	if err != nil {
		return fmt.Errorf("report html: %w", err)
	}
	var input reporthtml.Input
	input.Title = *title
	if isCheckpoint {
		lg, err := soak.Read(in)
		if err != nil {
			return fmt.Errorf("report html: %w", err)
		}
		input.Soak = lg
	} else {
		r, err := report.ReadFile(in)
		if err != nil {
			return fmt.Errorf("report html: %w", err)
		}
		input.Result = r
		if *soakPath == "" && r.SoakCheckpoint != "" {
			p := r.SoakCheckpoint
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(in), p)
			}
			*soakPath = p
		}
	}
	if *soakPath != "" {
		lg, err := soak.Read(*soakPath)
		if err != nil {
			return fmt.Errorf("report html: %w", err)
		}
		input.Soak = lg
	}
	for _, n := range noteLines(input.Soak) {
		fmt.Fprintln(stderr, "note:", n)
	}
	dst := *out
	if dst == "" {
		dst = strings.TrimSuffix(strings.TrimSuffix(in, ".json"), ".jsonl") + ".html"
	}
	if err := writeAtomic(dst, func(w io.Writer) error { return reporthtml.Render(w, input) }); err != nil {
		return fmt.Errorf("report html: %w", err)
	}
	fmt.Fprintln(stdout, dst)
	return nil
}

func noteLines(lg *soak.Log) []string {
	if lg == nil {
		return nil
	}
	return lg.Notes
}

func writeAtomic(path string, f func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := f(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ParseThreshold reads "10%", "10" (percent) or "0.1" (fraction < 1).
func ParseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("threshold %q: want e.g. 10%%", s)
	}
	if pct || v >= 1 {
		v /= 100
	}
	return v, nil
}

func runCompare(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	thr := fs.String("threshold", "10%", "relative change that counts as a regression")
	minDelta := fs.Duration("min-delta", 0, "ignore latency changes smaller than this")
	base := fs.String("baseline", "", "take BASE from the results store: last-pass, branch:NAME, tag:NAME (the last passing complete run of that git branch or tag), rev:PREFIX or RACK/RUN-ID")
	rack := fs.String("rack", "", "with --baseline: the rack to pick from (default: NEW's)")
	by := fs.String("by", "", "middleware: the middlewares side by side within RESULT (or across two results), not deltas between runs")
	dsn := o.storeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch *by {
	case "":
	case "middleware":
		if *base != "" {
			return fmt.Errorf("%w: report compare --by middleware takes result files, not --baseline", ErrUsage)
		}
		return compareMiddlewares(pos, stdout)
	default:
		return fmt.Errorf("%w: report compare --by %q: want middleware", ErrUsage, *by)
	}
	want := 2
	if *base != "" {
		want = 1
	}
	if len(pos) != want {
		if want == 1 {
			return fmt.Errorf("%w: report compare --baseline wants NEW only, got %d file(s)", ErrUsage, len(pos))
		}
		return fmt.Errorf("%w: report compare wants BASE and NEW, got %d file(s)", ErrUsage, len(pos))
	}
	t, err := ParseThreshold(*thr)
	if err != nil {
		return fmt.Errorf("%w: --%v", ErrUsage, err)
	}
	cur, err := report.ReadFile(pos[len(pos)-1])
	if err != nil {
		return fmt.Errorf("report compare: %w", err)
	}
	var b *report.Result
	if *base != "" {
		s, err := o.open(ctx, *dsn)
		if err != nil {
			return fmt.Errorf("report compare: %w", err)
		}
		defer s.Close()
		if b, err = baseline(ctx, s, *base, *rack, cur); err != nil {
			return fmt.Errorf("report compare: %w", err)
		}
		ref := ""
		if b.Run.GitBranch != "" {
			ref = " on " + b.Run.GitBranch
		}
		if len(b.Run.GitTags) > 0 {
			ref += " tags " + strings.Join(b.Run.GitTags, ",")
		}
		fmt.Fprintf(stdout, "baseline: run %s/%s (rev %s%s, %s) from %s\n", b.Run.Rack, b.Run.ID, short(b.Run.GitRevision), ref,
			b.Run.Start.UTC().Format("2006-01-02 15:04Z"), s.Name())
	} else if b, err = report.ReadFile(pos[0]); err != nil {
		return fmt.Errorf("report compare: %w", err)
	}
	base2 := b
	c := report.Compare(base2, cur, report.CompareOptions{Threshold: t, MinDeltaNs: int64(*minDelta)})
	if err := c.WriteTable(stdout); err != nil {
		return err
	}
	return c.Err()
}

// compareMiddlewares prints the middleware comparison of one result, or
// of two read as one (e.g. hilrig's run and a peers' run). Not a verdict:
// it never fails on the figures.
func compareMiddlewares(files []string, stdout io.Writer) error {
	if len(files) < 1 || len(files) > 2 {
		return fmt.Errorf("%w: report compare --by middleware wants RESULT.json [OTHER.json], got %d file(s)", ErrUsage, len(files))
	}
	var rs []*report.Result
	for i, f := range files {
		r, err := report.ReadFile(f)
		if err != nil {
			return fmt.Errorf("report compare --by middleware: %w", err)
		}
		if len(files) > 1 {
			fmt.Fprintf(stdout, "run %d: %s (rack %s, run %s, rev %s)\n", i+1, f, r.Run.Rack, r.Run.ID, short(r.Run.GitRevision))
		}
		rs = append(rs, r)
	}
	if len(rs) > 1 {
		fmt.Fprintln(stdout, "note: ratios across two runs compare two moments of the machines; within one run they are fairer")
	}
	if err := report.WriteMiddlewareTable(stdout, report.CompareMiddlewares(rs...)); err != nil {
		return fmt.Errorf("report compare --by middleware: %w", err)
	}
	return nil
}
