package harness

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/procstat"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/labels"
)

// Flags every suite binary accepts (after `--` with the ginkgo CLI, e.g.
// `go tool ginkgo -r ./suites -- -hilrig.config=lab.config`).
var (
	configFlag = flag.String("hilrig.config", "", "run configuration (default $"+fixtures.ConfigEnv+", else the "+fixtures.ConfigFile+" found walking up from the suite's directory)")
	// CaseBudget bounds the measuring time of one case: a low-rate case
	// sends min(messages, rate × budget) messages (at least MinMessages).
	caseBudget = flag.Duration("hilrig.case-budget", 2*time.Second, "longest measuring time of one latency case; low-rate cases send fewer messages")
	verbose    = flag.Bool("hilrig.verbose", false, "log rig progress to the Ginkgo writer")
)

// MinMessages is the fewest messages a budget-limited case sends.
const MinMessages = 40

// TestContext is the static, shared context of one suite binary: the run
// configuration, the rack, its bounds profile and label filter, and where
// the report goes. It is built once by [RunSuite] before any node runs, is
// read-only afterwards (safe for concurrent use) and registers no nodes.
type TestContext struct {
	// Suite is the suite's name ("latency"); cases are filed under it.
	Suite string
	// ConfigPath is the ginkgo.config in use; Config its content.
	ConfigPath string
	Config     *fixtures.Config
	// Rack is the rack fixture; Profile the bounds profile ginkgo.config
	// names.
	Rack    *fixtures.Rack
	Profile *fixtures.BoundsProfile
	// Filter is the rack-derived label filter (and why specs are skipped).
	Filter fixtures.Filter
	// ReportDir is report_dir resolved against the config file; RunDir is
	// this run's directory below it; RunID names the run.
	ReportDir, RunDir, RunID string
	// CaseBudget bounds one latency case's measuring time.
	CaseBudget time.Duration
	// Repetitions is how many times a side-by-side comparison cell runs
	// each middleware, interleaved (ginkgo.config repetitions, or
	// short_repetitions in the short form: see ShortForm).
	Repetitions int
	// Log receives rig progress (Ginkgo writer with -hilrig.verbose, else
	// discarded).
	Log *slog.Logger
	// Started is when the suite binary loaded its context.
	Started time.Time
	// Binary is the hilrig binary for local and netns boards, built by
	// RunSuite before any spec runs (so no spec's timeout pays for a cold
	// build); empty in contexts made by Load alone. With runnable peers it
	// is the peer agent (cmd/hilrig-peer), which runs hilrig's endpoints
	// too.
	Binary string
	// Middlewares are the buses specs measure side by side: "hilrig"
	// first, then the configured peers that can run here (docs/peers.md);
	// PeerSkips says why each other configured peer does not;
	// PeerTags are the peer agent's build tags.
	Middlewares []string
	PeerSkips   map[string]string
	PeerTags    []string
	// LeaseWait is how long opening the rack waits for a lease another
	// run holds ([TestContext.RackLease]); Load sets DefaultLeaseWait.
	LeaseWait time.Duration
}

// BuildTimeout bounds building hilrig for the agents before the specs run
// (a cold build on a loaded 2-core machine takes minutes).
const BuildTimeout = 15 * time.Minute

var current *TestContext

// Context returns the suite's context. It is set by [RunSuite] before the
// specs run; calling it earlier is a programming error reported as a
// Ginkgo failure.
func Context() *TestContext {
	if current == nil {
		ginkgo.Fail("harness.Context() used before harness.RunSuite")
	}
	return current
}

// Load builds the context of suite: resolves and loads ginkgo.config and
// the rack it names, the bounds profile and the label filter. dir is where
// the search for ginkgo.config starts (the suite's package directory).
func Load(suite, dir string) (*TestContext, error) {
	path, err := fixtures.ResolveConfigPath(*configFlag, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg, err := fixtures.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	rack, err := cfg.LoadRack()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	prof, err := rack.Profile(cfg.Bounds)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	tc := &TestContext{Suite: suite, ConfigPath: path, Config: cfg, Rack: rack, Profile: prof,
		Filter: rack.LabelFilter(), CaseBudget: *caseBudget, Started: time.Now(),
		Log: slog.New(slog.DiscardHandler), LeaseWait: DefaultLeaseWait}
	if tc.CaseBudget <= 0 {
		return nil, fmt.Errorf("%w: -hilrig.case-budget %v: want > 0", ErrConfig, tc.CaseBudget)
	}
	tc.ReportDir = cfg.RelPath(cfg.ReportDir)
	if abs, err := filepath.Abs(tc.ReportDir); err == nil {
		tc.ReportDir = abs
	}
	tc.Middlewares, tc.PeerTags, tc.PeerSkips = resolveMiddlewares(cfg)
	tc.Repetitions = cfg.RepetitionsFor(ShortForm(rack.Name))
	tc.RunID = RunID()
	tc.RunDir = filepath.Join(tc.ReportDir, "runs", tc.RunID)
	return tc, nil
}

// RunSuite is the body of a suite's TestX: it loads the context (failing
// the test with the loader's message when ginkgo.config or the rack is
// wrong), prints which needs:X specs the rack filters out and why, ANDs
// the rack's label filter into Ginkgo's suite configuration, defaults
// Ginkgo's JUnit and JSON reports into the run directory, registers the
// suite's SynchronizedBeforeSuite — the health gate ([CheckHealth]: every
// board reachable with the controller's build, every claimed capability
// working; failing it fails the suite, so no suite measures on an
// unhealthy rack) — and runs the specs. Suites must not register a
// BeforeSuite of their own. It also enforces the closed label vocabulary
// (suites/labels) on every spec, run or filtered out: a spec labelled
// outside it fails before it runs, naming the label. Blocks until the
// suite ends.
func RunSuite(t *testing.T, suite string) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	tc, err := Load(suite, ".")
	if err != nil {
		t.Fatalf("hilrig %s suite: %v", suite, err)
	}
	if *verbose {
		tc.Log = slog.New(slog.NewTextHandler(ginkgo.GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	current = tc
	sc, rc := ginkgo.GinkgoConfiguration()
	sc.LabelFilter = tc.Filter.And(sc.LabelFilter)
	if err := os.MkdirAll(tc.RunDir, 0o755); err != nil {
		t.Fatalf("hilrig %s suite: report directory: %v", suite, err)
	}
	if sc.DryRun {
		// nothing will run: no agents to build
	} else if bin, err := buildAgent(tc.PeerTags); err != nil {
		t.Fatalf("hilrig %s suite: %v", suite, err)
	} else {
		tc.Binary = bin
	}
	if rc.JUnitReport == "" {
		rc.JUnitReport = filepath.Join(tc.RunDir, "junit-"+suite+".xml")
	}
	if rc.JSONReport == "" {
		rc.JSONReport = filepath.Join(tc.RunDir, "ginkgo-"+suite+".json")
	}
	if ginkgo.GinkgoParallelProcess() == 1 {
		printSkips(os.Stdout, tc)
		if !sc.DryRun {
			tc.BeginStore(os.Stdout)
			tc.serveMetrics(os.Stdout)
		}
	}
	registerHealthGate(tc)
	ginkgo.ReportBeforeEach(checkLabels)
	ginkgo.RunSpecs(t, "hilrig "+suite, sc, rc)
}

// checkLabels fails the spec of r when one of its labels (its own or its
// containers') is outside the vocabulary. A ReportBeforeEach node, so it
// sees every spec, also those the label filter skips, and a failure keeps
// the spec from running.
func checkLabels(r types.SpecReport) {
	if err := LabelError(r); err != nil {
		ginkgo.Fail(err.Error())
	}
}

// LabelError names the labels of the spec of r outside the vocabulary, nil
// when there are none.
func LabelError(r types.SpecReport) error {
	if err := labels.Validate(r.Labels()...); err != nil {
		return fmt.Errorf("spec %q (%s): %w", r.FullText(), r.LeafNodeLocation, err)
	}
	return nil
}

// buildAgent builds the agents' binary: hilrig, or the peer agent with
// the peers' build tags when any peer runs here.
func buildAgent(peerTags []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	return rig.BuildAgents(ctx, peerTags)
}

func printSkips(w io.Writer, tc *TestContext) {
	for _, s := range tc.Filter.Skipped {
		fmt.Fprintf(w, "hilrig: specs labelled %s are skipped: %s\n", s.Label, s.Reason)
	}
	for _, mw := range slices.Sorted(maps.Keys(tc.PeerSkips)) {
		fmt.Fprintf(w, "hilrig: specs on middleware %s are skipped: %s\n", mw, tc.PeerSkips[mw])
	}
}

// SkipReason returns why specs needing capability c are filtered out on
// this rack, or "" when the rack claims c.
func (tc *TestContext) SkipReason(c fixtures.Capability) string {
	for _, s := range tc.Filter.Skipped {
		if s.Capability == c {
			return s.Reason
		}
	}
	return ""
}

// Messages returns how many measured messages a case at rateHz sends: the
// configured count, limited to what fits the case budget at that rate
// (never fewer than MinMessages). Rate 0 (as fast as possible) gets the
// configured count.
func (tc *TestContext) Messages(rateHz float64) (n uint64, limited bool) {
	n = uint64(tc.Config.Messages)
	if rateHz <= 0 {
		return n, false
	}
	if fit := uint64(rateHz * tc.CaseBudget.Seconds()); fit < n {
		return max(fit, MinMessages), true
	}
	return n, false
}

// ShortForm says whether the suites run in their short form: on the
// embedded sim rack (as CI runs them, and as the soak suite picks its
// smoke profile there) or under `go test -short`. The short form runs
// comparison cells short_repetitions times instead of repetitions.
func ShortForm(rackName string) bool {
	if rackName == fixtures.SimRackName {
		return true
	}
	// testing.Short panics before the test flags are parsed (a binary
	// that is not a test, or a call during init).
	if flag.Lookup("test.short") == nil || !flag.Parsed() {
		return false
	}
	return testing.Short()
}

// RunID names the current run: $HILRIG_RUN_ID, else the parent process's
// start time and pid (every suite binary of one `ginkgo -r` shares its
// parent), e.g. "20261129T200102Z-p4242".
func RunID() string {
	if id := os.Getenv("HILRIG_RUN_ID"); id != "" {
		return sanitize(id)
	}
	ppid := os.Getppid()
	return parentStart(ppid).UTC().Format("20060102T150405Z") + "-p" + strconv.Itoa(ppid)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// parentStart is the start time of pid (internal/procstat); now when
// unreadable.
func parentStart(pid int) time.Time {
	t, err := procstat.StartTime(pid)
	if err != nil {
		return time.Now()
	}
	return t
}
