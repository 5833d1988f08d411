package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
	"github.com/hilrig/hilrig/report/soak"
)

// fixtureLimit states fixtures.MaxFileSize in messages.
const fixtureLimit = "the 256 KiB limit for fixture files"

// SuiteOrder is the order suites appear in the merged report; others
// follow alphabetically.
var SuiteOrder = []string{"preflight", "latency", "throughput", "fanout", "startup", "scope", "soak", "faults"}

// KeepRuns is how many run directories WriteReport keeps below
// report_dir/runs (oldest are removed).
const KeepRuns = 20

// WriteReport is the body of every suite's ReportAfterSuite: it writes the
// suite's result to the run directory, merges it with the results of the
// other suite packages of the same run (under a file lock), regenerates
// the HTML report and prints where it is. A failure to write fails the
// suite.
func WriteReport(r types.Report) {
	tc := Context()
	paths, err := tc.WriteReport(r, os.Stdout)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	_ = paths
}

// Paths are the files WriteReport wrote.
type Paths struct {
	Suite, RunResult, RunHTML, Result, HTML string
	// StoreErr is why the run could not be written to the results store
	// (nil when it was, or the store is off); the files above are written
	// regardless.
	StoreErr error
}

// WriteReport is [WriteReport] with the context explicit; it prints the
// report's location to w and returns the paths written.
func (tc *TestContext) WriteReport(r types.Report, w io.Writer) (Paths, error) {
	col, cerr := collect(tc.Suite, r)
	res := report.NewResult(tc.RunInfo(r.StartTime, r.EndTime))
	res.Cases = col.cases
	res.Run.Boards = mergeBoards(nil, col.boards)
	res.Notes = append(skipNotes(tc.Filter), col.notes...)
	res.SoakCheckpoint = col.soak
	if cerr != nil {
		res.Notes = append(res.Notes, "some report entries could not be read: "+cerr.Error())
	}
	if err := os.MkdirAll(tc.RunDir, 0o755); err != nil {
		return Paths{}, fmt.Errorf("%w: %w", ErrReport, err)
	}
	p := Paths{Suite: filepath.Join(tc.RunDir, tc.Suite+".json"), RunResult: filepath.Join(tc.RunDir, "result.json"),
		RunHTML: filepath.Join(tc.RunDir, "index.html"), Result: filepath.Join(tc.ReportDir, "result.json"),
		HTML: filepath.Join(tc.ReportDir, "index.html")}
	if err := res.WriteFile(p.Suite); err != nil {
		return p, fmt.Errorf("%w: %w", ErrReport, err)
	}
	unlock, err := lockDir(tc.ReportDir)
	if err != nil {
		return p, err
	}
	defer unlock()
	merged, err := MergeRun(tc.RunDir)
	if err != nil {
		return p, err
	}
	soakLog := readSoak(merged)
	if err := merged.WriteFile(p.RunResult); err != nil {
		return p, fmt.Errorf("%w: %w", ErrReport, err)
	}
	if err := writeHTML(p.RunHTML, merged, soakLog); err != nil {
		return p, err
	}
	// The traces stay in the run's directory: the top-level result and
	// HTML, one level up, link them through runs/<id>/.
	if rel, err := filepath.Rel(tc.ReportDir, tc.RunDir); err == nil {
		for i := range merged.Cases {
			if t := merged.Cases[i].Trace; t != nil && t.File != "" && !filepath.IsAbs(t.File) {
				t.File = filepath.ToSlash(filepath.Join(rel, t.File))
			}
		}
	}
	if err := merged.WriteFile(p.Result); err != nil {
		return p, fmt.Errorf("%w: %w", ErrReport, err)
	}
	if err := writeHTML(p.HTML, merged, soakLog); err != nil {
		return p, err
	}
	pruneRuns(filepath.Join(tc.ReportDir, "runs"), KeepRuns)
	// The store comes last: result.json and the HTML are on disk whatever
	// happens to it, and a store error is reported, not fatal.
	if err := tc.putStore(res, readSoak(res), p.RunResult); err != nil {
		fmt.Fprintf(w, "\nhilrig: %v\n", err)
		p.StoreErr = err
	}
	fmt.Fprintf(w, "\nhilrig %s: %d cases, suite verdict %s; run %s so far: %d cases, verdict %s\n",
		tc.Suite, len(res.Cases), res.Verdict(), tc.RunID, len(merged.Cases), merged.Verdict())
	fmt.Fprintf(w, "hilrig report: %s\nhilrig result: %s\n\n", p.HTML, p.Result)
	return p, nil
}

// rackLabel is the rack as results name it: "name (file)".
func (tc *TestContext) rackLabel() string {
	if tc.Rack.File != "" {
		return tc.Rack.Name + " (" + tc.Rack.File + ")"
	}
	return tc.Rack.Name
}

// RunInfo collects the environment of this run: machine, rack, git
// revision and the configuration as given (ginkgo.config and the rack
// fixture's text).
func (tc *TestContext) RunInfo(start, end time.Time) report.RunInfo {
	ri := hostinfo.CollectEnv()
	ri.Rack = tc.rackLabel()
	ri.ID = tc.RunID
	ri.GitRevision = hostinfo.GitRevision(filepath.Dir(tc.ConfigPath))
	ri.GitBranch, ri.GitTags = hostinfo.GitRef(filepath.Dir(tc.ConfigPath))
	ri.Version = "(devel)" // replaced by the agents' build when preflight reports it
	ri.ConfigFile = tc.ConfigPath
	var cfg strings.Builder
	// The loaders read both already; read again (to file them as given)
	// with the same bounds: regular files of at most fixtures.MaxFileSize.
	if b, err := safefile.Read(tc.ConfigPath, fixtures.MaxFileSize, fixtureLimit); err == nil {
		fmt.Fprintf(&cfg, "# %s\n%s\n", tc.ConfigPath, b)
	}
	if tc.Rack.File == fixtures.SimRackFile {
		fmt.Fprintf(&cfg, "# rack: %s (as loaded: capabilities %v)\n%s", tc.Rack.File, tc.Rack.Capabilities, fixtures.SimRackYAML())
	} else if b, err := safefile.Read(tc.Rack.File, fixtures.MaxFileSize, fixtureLimit); err == nil {
		fmt.Fprintf(&cfg, "# rack: %s\n%s", tc.Rack.File, b)
	}
	ri.Config = cfg.String()
	ri.Start, ri.End = start, end
	if ri.Start.IsZero() {
		ri.Start = tc.Started
	}
	if ri.End.IsZero() {
		ri.End = time.Now()
	}
	return ri
}

// MergeRun reads every suite result in dir (all *.json except result.json
// and Ginkgo's ginkgo-*.json) and merges them into one result: the run
// spans the earliest start to the latest end, boards are merged by name,
// cases are ordered by SuiteOrder, notes de-duplicated.
func MergeRun(dir string) (*report.Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReport, err)
	}
	var parts []*report.Result
	for _, f := range files {
		b := filepath.Base(f)
		if b == "result.json" || strings.HasPrefix(b, "ginkgo-") || strings.HasPrefix(b, ".") {
			continue
		}
		r, err := report.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: merge %s: %w", ErrReport, dir, err)
		}
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no suite results in %s", ErrEmpty, dir)
	}
	sort.SliceStable(parts, func(i, j int) bool { return suiteRank(firstSuite(parts[i])) < suiteRank(firstSuite(parts[j])) })
	m := report.NewResult(parts[0].Run)
	m.Run.Boards = nil
	for _, p := range parts {
		if p.Run.Start.Before(m.Run.Start) {
			m.Run.Start = p.Run.Start
		}
		if p.Run.End.After(m.Run.End) {
			m.Run.End = p.Run.End
		}
		m.Run.Boards = mergeBoards(m.Run.Boards, p.Run.Boards)
		m.Cases = append(m.Cases, p.Cases...)
		if p.SoakCheckpoint != "" {
			m.SoakCheckpoint = p.SoakCheckpoint // suites in SuiteOrder: the last soak wins
		}
		for _, n := range p.Notes {
			if !slices.Contains(m.Notes, n) {
				m.Notes = append(m.Notes, n)
			}
		}
	}
	sort.SliceStable(m.Cases, func(i, j int) bool { return suiteRank(m.Cases[i].Suite) < suiteRank(m.Cases[j].Suite) })
	for _, b := range m.Run.Boards { // the build the boards run (preflight checked they agree)
		if b.AgentVersion != "" {
			m.Run.Version = strings.TrimPrefix(b.AgentVersion, "hilrig ")
			break
		}
	}
	return m, nil
}

func firstSuite(r *report.Result) string {
	if len(r.Cases) == 0 {
		return "~"
	}
	return r.Cases[0].Suite
}

func suiteRank(s string) string {
	if i := slices.Index(SuiteOrder, s); i >= 0 {
		return fmt.Sprintf("%02d", i)
	}
	return "99" + s
}

// mergeBoards adds bs to into by board name; non-empty fields of later
// entries win.
func mergeBoards(into, bs []report.BoardInfo) []report.BoardInfo {
	for _, b := range bs {
		i := slices.IndexFunc(into, func(x report.BoardInfo) bool { return x.Name == b.Name })
		if i < 0 {
			into = append(into, b)
			continue
		}
		x := &into[i]
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&x.Kernel, b.Kernel)
		set(&x.CPUModel, b.CPUModel)
		set(&x.CPUGovernor, b.CPUGovernor)
		set(&x.OnlineCPUs, b.OnlineCPUs)
		set(&x.AgentVersion, b.AgentVersion)
		if b.WakeupFloor != nil {
			x.WakeupFloor = b.WakeupFloor
		}
		if b.Tuning != nil {
			x.Tuning = b.Tuning
		}
	}
	return into
}

// readSoak reads the run's soak checkpoint (nil when there is none). A
// checkpoint that cannot be read becomes a note of r, so the report still
// appears and says why its soak section is missing.
func readSoak(r *report.Result) *soak.Log {
	if r.SoakCheckpoint == "" {
		return nil
	}
	lg, err := soak.Read(r.SoakCheckpoint)
	if err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("soak checkpoint %s not rendered: %v", r.SoakCheckpoint, err))
		return nil
	}
	return lg
}

// writeHTML renders r (and the soak section of lg when not nil) to path
// atomically.
func writeHTML(path string, r *report.Result, lg *soak.Log) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrReport, err)
	}
	defer os.Remove(f.Name())
	title := fmt.Sprintf("hilrig report — rack %s — %s", r.Run.Rack, r.Run.Start.UTC().Format("2006-01-02 15:04Z"))
	if err := reporthtml.Render(f, reporthtml.Input{Title: title, Result: r, Soak: lg}); err != nil {
		f.Close()
		return fmt.Errorf("%w: render %s: %w", ErrReport, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrReport, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("%w: %w", ErrReport, err)
	}
	return nil
}

// pruneRuns removes all but the newest keep run directories (by name,
// which starts with the run's start time).
func pruneRuns(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		_ = os.RemoveAll(filepath.Join(dir, names[0]))
		names = names[1:]
	}
}

// Check is CI's gate on a result: it fails when the result has no cases or
// when a case measured nothing (no samples, no messages, no throughput)
// without saying why. A case with a Failure is not empty: it is a reported
// failure (and fails the run through its verdict).
func Check(r *report.Result) error {
	if r == nil || len(r.Cases) == 0 {
		return fmt.Errorf("%w: no cases", ErrEmpty)
	}
	var bad []string
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Name == "" {
			bad = append(bad, fmt.Sprintf("cases[%d] has no name", i))
			continue
		}
		if c.Failure != "" {
			continue
		}
		n := c.Summary.Count
		if c.Histogram != nil && n == 0 {
			n = c.Histogram.Count()
		}
		if n == 0 && c.Delivered == 0 && c.MsgsPerSec == 0 && c.ThroughputMBps == 0 {
			bad = append(bad, fmt.Sprintf("case %q is empty (no samples, nothing delivered, no failure stated)", c.Key()))
		}
		if c.Method.Kind == "" && n > 0 {
			bad = append(bad, fmt.Sprintf("case %q has latency samples but no method", c.Key()))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrEmpty, strings.Join(bad, "; "))
	}
	return nil
}

// CheckFile reads a result file and applies [Check].
func CheckFile(path string) error {
	r, err := report.ReadFile(path)
	if err != nil {
		return err
	}
	if err := Check(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
