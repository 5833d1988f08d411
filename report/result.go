package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/internal/safefile"
)

// SchemaVersion is the version of the result file this build writes and the
// newest it reads. Bump it on any incompatible change of the JSON model and
// keep reading older versions.
const SchemaVersion = 1

// Result is everything one run measured: the environment it ran in and every
// case with its distribution, bounds and verdicts. It is written as one JSON
// file per run (WriteFile) and is the input of the HTML report and of
// compare. Not safe for concurrent mutation.
type Result struct {
	SchemaVersion int     `json:"schema_version"`
	Run           RunInfo `json:"run"`
	Cases         []Case  `json:"cases"`
	// SoakCheckpoint is the path of a soak's JSONL checkpoint file, relative
	// to the result file's directory or absolute; the HTML report renders it.
	SoakCheckpoint string   `json:"soak_checkpoint,omitempty"`
	Notes          []string `json:"notes,omitempty"`
}

// RunInfo describes where and when a run happened. Fields the collector could
// not read are empty (never guessed).
type RunInfo struct {
	// ID names the run on its rack (the harness's run directory name, e.g.
	// "20261129T200102Z-p4242"); a results store keys runs by rack and ID.
	// Empty in files written before it existed.
	ID          string `json:"run_id,omitempty"`
	Machine     string `json:"machine"`
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	CPUGovernor string `json:"cpu_governor"` // e.g. "performance", or "performance,powersave" when CPUs differ
	OnlineCPUs  string `json:"online_cpus"`  // kernel list syntax, e.g. "0-3"
	NumCPU      int    `json:"num_cpu"`
	MemTotal    int64  `json:"mem_total_bytes,omitempty"`
	Rack        string `json:"rack"`
	GitRevision string `json:"git_revision"` // "<sha>" or "<sha>-dirty"
	// GitBranch is the branch checked out ("" on a detached HEAD) and
	// GitTags the tags pointing at the revision (see hostinfo.GitRef); a
	// results store picks baselines by them (compare --baseline
	// branch:NAME, tag:NAME).
	GitBranch string   `json:"git_branch,omitempty"`
	GitTags   []string `json:"git_tags,omitempty"`
	Version   string   `json:"hilrig_version"`
	GoVersion string   `json:"go_version,omitempty"`
	// Config is the run configuration as given (e.g. the text of
	// ginkgo.config and the rack fixture), stored verbatim.
	Config     string    `json:"config,omitempty"`
	ConfigFile string    `json:"config_file,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// Tuning is the controller host's real-time tuning (isolcpus,
	// nohz_full, NIC IRQ affinity).
	Tuning *HostTuning `json:"tuning,omitempty"`
	// Boards lists the environment of each board when it differs from the
	// controller's (agents report their own).
	Boards []BoardInfo `json:"boards,omitempty"`
}

// BoardInfo is the environment of one board as its agent reported it.
type BoardInfo struct {
	Name         string `json:"name"`
	Kernel       string `json:"kernel,omitempty"`
	CPUModel     string `json:"cpu_model,omitempty"`
	CPUGovernor  string `json:"cpu_governor,omitempty"`
	OnlineCPUs   string `json:"online_cpus,omitempty"`
	AgentVersion string `json:"agent_version,omitempty"`
	// WakeupFloor is the board's measured wake-up latency distribution
	// (preflight), the floor the middleware cannot beat.
	WakeupFloor *Summary `json:"wakeup_floor,omitempty"`
	// Tuning is the board's real-time tuning.
	Tuning *HostTuning `json:"tuning,omitempty"`
}

// Method kinds (internal/kind).
const (
	// OneWay: receive time − send time on two (PTP-synchronised) clocks or
	// one shared clock; uncertainty is the clock offset bound.
	OneWay = kind.OneWay
	// RTTHalf: half the round trip on one clock; assumes a symmetric path.
	RTTHalf = kind.RTTHalf
)

// Method says how a latency number was obtained; it is printed next to every
// number in reports and matcher messages.
type Method struct {
	Kind kind.MethodKind `json:"kind"` // OneWay or RTTHalf
	// Clocks names the clocks used, e.g. "CLOCK_REALTIME on both ends
	// (same host)" or "PHC eth0 of pub and sub, ptp4l locked".
	Clocks string `json:"clocks"`
	// UncertaintyNs bounds the error the clocks add to every sample (e.g.
	// |PTP offset| max + PHC read jitter); 0 means "not quantified".
	UncertaintyNs int64 `json:"uncertainty_ns"`
}

// String renders "one-way, PHC eth0 (ptp4l locked), ±120ns".
func (m Method) String() string {
	k := string(m.Kind)
	switch m.Kind {
	case RTTHalf:
		k = "RTT/2"
	case "":
		k = "method unknown"
	}
	s := k
	if m.Clocks != "" {
		s += ", " + m.Clocks
	}
	if m.UncertaintyNs > 0 {
		s += ", ±" + FormatNs(m.UncertaintyNs)
	} else {
		s += ", uncertainty not quantified"
	}
	return s
}

// Case is one measured case: what was run, how it was measured, what came
// out, what it was judged against and the verdicts.
type Case struct {
	Name      string   `json:"name"`
	Suite     string   `json:"suite"`
	Labels    []string `json:"labels,omitempty"`
	Transport string   `json:"transport,omitempty"` // "intra", "shm-copy", "shm-loan", "udp", ...
	// Middleware is the bus measured: "" or "hilrig" (its own), or a peer
	// ("cyclonedds", "fastdds-shm", "fastdds-udp", "iceoryx").
	Middleware   kind.Middleware  `json:"middleware,omitempty"`
	PayloadBytes int64            `json:"payload_bytes,omitempty"`
	RateHz       float64          `json:"rate_hz,omitempty"`
	Reliability  kind.Reliability `json:"reliability,omitempty"` // "reliable" or "best-effort"
	Subscribers  int              `json:"subscribers,omitempty"`
	// Repetition is which run of its comparison cell this case is
	// (1..R, issue 37): the cell runs every middleware R times,
	// interleaved, and names repetition k RepName(name, k). 0: the case
	// ran once (results written before cells repeated, or not a cell).
	Repetition int `json:"repetition,omitempty"`
	// Route is where the traffic ran (rig); nil in result files written
	// before cases carried it, and for cases without traffic (a soak's
	// totals, a health gate).
	Route  *Route `json:"route,omitempty"`
	Method Method `json:"method"`
	// Excluded counts samples dropped from the distribution because the
	// clocks were not trustworthy (PTP not locked); they are not lost.
	Excluded  int64 `json:"excluded,omitempty"`
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	// Lost is counted by sequence-number gaps at the subscriber(s).
	Lost int64 `json:"lost"`
	// Histogram holds every latency sample (ns); Summary is computed from it
	// by Finalize (or set directly when only a summary is known).
	Histogram *Histogram `json:"histogram,omitempty"`
	Summary   Summary    `json:"summary"`

	CPUPercent     float64       `json:"cpu_percent,omitempty"`     // of one core, summed over endpoints
	RSSBytes       int64         `json:"rss_bytes,omitempty"`       // max RSS over the endpoints
	ThroughputMBps float64       `json:"throughput_mbps,omitempty"` // 10^6 bytes/s delivered
	MsgsPerSec     float64       `json:"msgs_per_sec,omitempty"`
	Duration       time.Duration `json:"duration_ns,omitempty"`

	Bounds  *Bounds          `json:"bounds,omitempty"`
	Checks  []Check          `json:"checks,omitempty"`
	Verdict Verdict          `json:"verdict"`
	Scope   *ScopeComparison `json:"scope,omitempty"`
	// Extra holds named side-by-side numbers (e.g. "batching off p99") that
	// a suite wants in the report without a model change; the keys a build
	// writes are the ExtraKey constants, a file may hold others.
	Extra map[ExtraKey]float64 `json:"extra,omitempty"`
	// Failure is the reason a case could not be measured (e.g. "scope
	// disconnected"); such a case fails.
	Failure string   `json:"failure,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Additions records who added which notes, figures and checks after
	// the case was built (Add), in order; absent in files written before.
	Additions []Added `json:"additions,omitempty"`

	// Trace is the kernel trace kept for the window that broke a bound
	// (or the worst window) when tracing was asked for.
	Trace *TraceRef `json:"trace,omitempty"`
	// Counters are the endpoints' process counters over the case.
	Counters []EndpointCounters `json:"counters,omitempty"`
	// Stages splits the shared-memory path (shm transports only).
	Stages *StageSplit `json:"stages,omitempty"`
}

// ScopeStats are the delay statistics an instrument reported for the
// edge-to-edge measurement. A nil field is one the instrument did not give
// (reported as missing, never as 0).
type ScopeStats struct {
	MeanNs   *float64 `json:"mean_ns"`
	MinNs    *float64 `json:"min_ns"`
	MaxNs    *float64 `json:"max_ns"`
	StdDevNs *float64 `json:"stddev_ns"`
	Count    *int64   `json:"count"`
}

// ScopeComparison sets the scope's wire-to-callback delay against the
// software one-way latency of the same messages.
type ScopeComparison struct {
	Instrument string     `json:"instrument"` // *IDN? answer or sigrok driver
	Channels   string     `json:"channels,omitempty"`
	Scope      ScopeStats `json:"scope"`
	// SoftwareMeanNs is the mean of the software samples compared with.
	SoftwareMeanNs float64 `json:"software_mean_ns"`
	// DifferenceNs is scope mean − software mean; nil when the scope gave no
	// mean.
	DifferenceNs *float64 `json:"difference_ns"`
	ToleranceNs  int64    `json:"tolerance_ns"`
	Agree        bool     `json:"agree"`
	Note         string   `json:"note,omitempty"`
}

// F returns a pointer to v (for ScopeStats literals).
func F(v float64) *float64 { return &v }

// Compare fills DifferenceNs and Agree from Scope, SoftwareMeanNs and
// ToleranceNs. Agree is false when the scope mean is missing.
func (s *ScopeComparison) Compare() {
	s.DifferenceNs, s.Agree = nil, false
	if s.Scope.MeanNs == nil {
		if s.Note == "" {
			s.Note = "scope reported no mean"
		}
		return
	}
	d := *s.Scope.MeanNs - s.SoftwareMeanNs
	s.DifferenceNs = &d
	ad := d
	if ad < 0 {
		ad = -ad
	}
	s.Agree = ad <= float64(s.ToleranceNs)
}

// Finalize computes Summary from Histogram (when present), the scope
// comparison, and the checks and verdict against Bounds. Call it after the
// case is complete and before writing.
//
// Checks the caller put in c.Checks before (judged elsewhere, e.g. the
// soak verdicts) are kept: the result is the bound checks of Bounds.Judge
// followed by the caller's checks, minus any caller check whose Bound
// name a bound check of this call also has (so calling Finalize again
// re-judges instead of duplicating). The verdict is Fail when any check
// fails or Failure is set, else Pass when there is any check, else
// NoBounds.
func (c *Case) Finalize() {
	if c.Histogram != nil {
		c.Summary = c.Histogram.Summary()
	}
	if c.Scope != nil {
		if c.Scope.SoftwareMeanNs == 0 {
			c.Scope.SoftwareMeanNs = c.Summary.Mean
		}
		if c.Bounds != nil && c.Bounds.ScopeTolerance > 0 && c.Scope.ToleranceNs == 0 {
			c.Scope.ToleranceNs = int64(c.Bounds.ScopeTolerance)
		}
		c.Scope.Compare()
	}
	caller := c.Checks
	c.Checks, c.Verdict = nil, NoBounds
	if c.Bounds != nil {
		c.Checks, c.Verdict = c.Bounds.Judge(c)
	}
	judged := len(c.Checks)
	for _, ck := range caller {
		if slices.ContainsFunc(c.Checks[:judged], func(b Check) bool { return b.Bound == ck.Bound }) {
			continue // a bound check of an earlier Finalize: re-judged above
		}
		c.Checks = append(c.Checks, ck)
		switch {
		case ck.Verdict == Fail:
			c.Verdict = Fail
		case ck.Verdict == Pass && c.Verdict == NoBounds:
			c.Verdict = Pass
		}
	}
	if c.Failure != "" {
		c.Verdict = Fail
	}
}

// Key identifies a case across runs (for compare): suite and name.
func (c *Case) Key() string { return c.Suite + "/" + c.Name }

// NewResult returns a result of the current schema version.
func NewResult(run RunInfo) *Result { return &Result{SchemaVersion: SchemaVersion, Run: run} }

// Verdict is the overall verdict: Fail if any case failed, Pass if any case
// was judged and none failed, NoBounds otherwise.
func (r *Result) Verdict() Verdict {
	v := NoBounds
	for i := range r.Cases {
		switch r.Cases[i].Verdict {
		case Fail:
			return Fail
		case Pass:
			v = Pass
		}
	}
	return v
}

// Encode writes r as indented JSON.
func (r *Result) Encode(w io.Writer) error {
	if r.SchemaVersion == 0 {
		r.SchemaVersion = SchemaVersion
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFile writes r atomically (temporary file in the same directory,
// fsync, rename), so a crash never leaves a half-written result in place of
// a previous one.
//
// A case whose Trace still holds its trace-event JSON (Chrome) gets it
// written beside the result, in <name>.traces/case-<i>.json, and
// Trace.File set to that relative path.
func (r *Result) WriteFile(path string) error {
	dir := filepath.Dir(path)
	if err := r.writeTraces(path); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := r.Encode(f); err != nil {
		f.Close()
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write result %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	return nil
}

// Decode reads a result; name is used in error messages (a file name).
// A missing, unknown or newer schema version is an error wrapping
// ErrSchemaVersion that names the file and the version.
func Decode(data []byte, name string) (*Result, error) {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadResult, name, jsonPos(data, err))
	}
	if probe.SchemaVersion == nil {
		return nil, fmt.Errorf("%w: %s has no schema_version (not a hilrig result file?)", ErrSchemaVersion, name)
	}
	if v := *probe.SchemaVersion; v < 1 || v > SchemaVersion {
		return nil, fmt.Errorf("%w: %s has schema_version %d, this hilrig reads 1..%d (upgrade hilrig to read it)",
			ErrSchemaVersion, name, v, SchemaVersion)
	}
	var r Result
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadResult, name, jsonPos(data, err))
	}
	for i := range r.Cases {
		if r.Cases[i].Name == "" {
			return nil, fmt.Errorf("%w: %s: cases[%d] has no name", ErrBadResult, name, i)
		}
	}
	if field, v, ok := r.negativeCount(); ok {
		return nil, fmt.Errorf("%w: %s: %s is %d, a count cannot be negative", ErrBadResult, name, field, v)
	}
	return &r, nil
}

// MaxResultFile is the largest result file ReadFile reads, in bytes
// (64 MiB). A run of a few hundred cases writes a few MB (histograms are
// compressed; traces are separate files); decoding costs about five times
// the file's size in memory (a 125 MB file took 685 MB to import), so the
// cap bounds a mistaken or hostile file at a few hundred MB.
const MaxResultFile = 64 << 20

// resultLimit states MaxResultFile in messages.
const resultLimit = "the 64 MiB limit for result files"

// ReadFile reads a result file (see Decode): a regular file of at most
// MaxResultFile bytes. A FIFO or a device (/dev/zero) is refused without
// blocking or reading (internal/safefile), as is a larger file.
func ReadFile(path string) (*Result, error) {
	data, err := safefile.Read(path, MaxResultFile, resultLimit)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	return Decode(data, path)
}

// negativeCount finds the first count, size or duration in r that is
// negative, which no run writes: it returns the field's path in the JSON
// ("cases[2].lost") and its value.
func (r *Result) negativeCount() (string, int64, bool) {
	type field struct {
		name string
		v    int64
	}
	check := func(prefix string, fs ...field) (string, int64, bool) {
		for _, f := range fs {
			if f.v < 0 {
				return prefix + f.name, f.v, true
			}
		}
		return "", 0, false
	}
	summary := func(s *Summary) []field {
		return []field{{"count", s.Count}, {"clamped", s.Clamped}}
	}
	if n, v, bad := check("run.", field{"num_cpu", int64(r.Run.NumCPU)}, field{"mem_total_bytes", r.Run.MemTotal}); bad {
		return n, v, bad
	}
	for i := range r.Run.Boards {
		if w := r.Run.Boards[i].WakeupFloor; w != nil {
			if n, v, bad := check(fmt.Sprintf("run.boards[%d].wakeup_floor.", i), summary(w)...); bad {
				return n, v, bad
			}
		}
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		p := fmt.Sprintf("cases[%d].", i)
		if n, v, bad := check(p, field{"payload_bytes", c.PayloadBytes}, field{"subscribers", int64(c.Subscribers)},
			field{"excluded", c.Excluded}, field{"sent", c.Sent}, field{"delivered", c.Delivered}, field{"lost", c.Lost},
			field{"rss_bytes", c.RSSBytes}, field{"duration_ns", int64(c.Duration)}); bad {
			return n, v, bad
		}
		if n, v, bad := check(p+"summary.", summary(&c.Summary)...); bad {
			return n, v, bad
		}
		if c.Scope != nil && c.Scope.Scope.Count != nil {
			if n, v, bad := check(p+"scope.scope.", field{"count", *c.Scope.Scope.Count}); bad {
				return n, v, bad
			}
		}
		if st := c.Stages; st != nil {
			if n, v, bad := check(p+"stages.", field{"count", st.Count}); bad {
				return n, v, bad
			}
			for _, s := range []struct {
				name string
				s    *Summary
			}{{"copy", &st.Copy}, {"wake", &st.Wake}, {"callback", &st.Callback}} {
				if n, v, bad := check(p+"stages."+s.name+".", summary(s.s)...); bad {
					return n, v, bad
				}
			}
		}
		for j := range c.Counters {
			e := &c.Counters[j]
			if n, v, bad := check(fmt.Sprintf("%scounters[%d].", p, j),
				field{"voluntary_ctx_switches", e.VoluntaryCtxSwitches}, field{"involuntary_ctx_switches", e.InvoluntaryCtxSwitches},
				field{"run_delay_ns", e.RunDelayNs}, field{"minor_faults", e.MinorFaults}, field{"major_faults", e.MajorFaults},
				field{"gc_cycles", e.GCCycles}, field{"gc_pause_total_ns", e.GCPauseTotalNs}, field{"gc_pause_max_ns", e.GCPauseMaxNs}); bad {
				return n, v, bad
			}
		}
	}
	return "", 0, false
}

// jsonPos adds a line:column to JSON syntax and type errors.
func jsonPos(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Errorf("line %d col %d: %w", line, col, err)
}

// DistributionLine renders the whole distribution on one line, with the
// method, e.g. "count=2000 min=20.0µs p50=29.9µs p90=… p99=… p99.9=… max=…
// mean=… stddev=… lost=0 [one-way, CLOCK_MONOTONIC, ±50ns]". Matchers and
// logs print it so a failure shows the shape, not one number.
func (c *Case) DistributionLine() string {
	s := c.Summary
	if c.Histogram != nil && s.Count == 0 {
		s = c.Histogram.Summary()
	}
	line := s.Line() + fmt.Sprintf(" lost=%d", c.Lost)
	if c.Excluded > 0 {
		line += fmt.Sprintf(" excluded=%d", c.Excluded)
	}
	return line + " [" + c.Method.String() + "]"
}

// Line renders the summary's statistics on one line (no loss, no method).
func (s Summary) Line() string {
	l := fmt.Sprintf("count=%d min=%s p50=%s p90=%s p99=%s p99.9=%s max=%s mean=%s stddev=%s",
		s.Count, FormatNs(s.Min), FormatNs(s.P50), FormatNs(s.P90), FormatNs(s.P99), FormatNs(s.P999),
		FormatNs(s.Max), FormatNs(int64(s.Mean)), FormatNs(int64(s.StdDev)))
	if s.Clamped > 0 {
		l += fmt.Sprintf(" clamped=%d", s.Clamped)
	}
	return l
}

// writeTraces stores each case's pending trace-event JSON next to the
// result file at path.
func (r *Result) writeTraces(path string) error {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) + ".traces"
	for i := range r.Cases {
		t := r.Cases[i].Trace
		if t == nil || len(t.Chrome) == 0 {
			continue
		}
		if err := os.MkdirAll(filepath.Join(filepath.Dir(path), base), 0o755); err != nil {
			return fmt.Errorf("write result %s: traces: %w", path, err)
		}
		rel := filepath.Join(base, fmt.Sprintf("case-%d.json", i))
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), rel), t.Chrome, 0o644); err != nil {
			return fmt.Errorf("write result %s: trace of case %q: %w", path, r.Cases[i].Key(), err)
		}
		t.File, t.Chrome = filepath.ToSlash(rel), nil
	}
	return nil
}
