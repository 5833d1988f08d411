package harness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
)

// Report entry names carrying data from specs to WriteReport. They travel
// inside Ginkgo's own report, so they survive `ginkgo -p` (specs on other
// processes) and also appear in Ginkgo's --json-report.
const (
	entryCase  = "hilrig.case"
	entryBoard = "hilrig.board"
	// entryTrace carries a case's trace-event JSON (report.TraceRef.Chrome
	// is not part of the case's JSON): collect puts it back on the case,
	// and the suite result's WriteFile stores it beside the result.
	entryTrace = "hilrig.trace"
	entryNote  = "hilrig.note"
	entrySoak  = "hilrig.soak"
)

// entryJSON is a report entry value that is already JSON; String keeps
// Ginkgo's textual representation short.
type entryJSON struct {
	b     []byte
	label string
}

func (e entryJSON) MarshalJSON() ([]byte, error) { return e.b, nil }
func (e entryJSON) String() string               { return e.label }

func addEntry(name string, v any, label string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: encode %s: %w", ErrReport, name, err)
	}
	ginkgo.AddReportEntry(name, entryJSON{b: b, label: label}, ginkgo.ReportEntryVisibilityNever)
	return nil
}

// Bounds returns the rack profile's bounds for transport (shm is judged
// with its entry whether sent by copy or on loan) at payload bytes: the
// exact size or the next larger listed one. ok is false when the profile
// has no entry (the case is then reported, not judged).
func (tc *TestContext) Bounds(transport fixtures.Transport, payload int) (report.Bounds, bool) {
	e, ok := tc.Profile.For(transport, payload)
	if !ok {
		return report.Bounds{}, false
	}
	return e.Bounds, true
}

// Record files a finished case for the report: it fills the suite name
// when empty, finalizes the case (summary, scope comparison, checks and
// verdict against c.Bounds) and attaches it to the running spec. Call it
// from a spec (It/BeforeAll/...) before asserting, so a failing case is
// in the report too. It also prints the distribution line when the spec
// fails or runs verbose. Returns an encoding error only.
func Record(c *report.Case) error {
	if c == nil {
		return fmt.Errorf("%w: nil case", ErrReport)
	}
	if c.Suite == "" && current != nil {
		c.Suite = current.Suite
	}
	c.Finalize()
	if metrics != nil {
		metrics.ObserveCase(c)
	}
	if err := addEntry(entryCase, c, c.Key()); err != nil {
		return err
	}
	if c.Trace != nil && len(c.Trace.Chrome) > 0 {
		ginkgo.AddReportEntry(entryTrace, entryJSON{b: c.Trace.Chrome, label: "trace of " + c.Key()}, ginkgo.ReportEntryVisibilityNever)
	}
	line := c.DistributionLine() + " verdict=" + string(c.Verdict)
	for _, ck := range c.Checks {
		if ck.Verdict == report.Fail {
			line += "; " + ck.String()
		}
	}
	if c.Failure != "" {
		line += "; failure: " + c.Failure
	}
	ginkgo.AddReportEntry(c.Name, line, ginkgo.ReportEntryVisibilityFailureOrVerbose)
	return nil
}

// RecordBoard files a board's environment (preflight) for the report's
// RunInfo.Boards. Entries for the same board are merged, later fields
// winning.
func RecordBoard(b report.BoardInfo) error { return addEntry(entryBoard, b, "board "+b.Name) }

// Note files a run-level note shown in the report (e.g. why a measurement
// method was chosen).
func Note(format string, args ...any) error {
	s := fmt.Sprintf(format, args...)
	return addEntry(entryNote, s, s)
}

// SoakCheckpoint files the path of a soak's JSONL checkpoint for the
// report: the suite's result and the merged run result carry it
// (report.Result.SoakCheckpoint, made absolute), and the run's HTML
// report renders the soak section (time series, verdicts, events, gaps)
// from it — also for a partial soak whose spec failed or timed out, as
// long as the spec filed the path. Call it from the spec as soon as the
// checkpoint exists. A run with several soaks keeps the last one filed.
// Returns an encoding error only.
func SoakCheckpoint(path string) error {
	if path == "" {
		return fmt.Errorf("%w: empty soak checkpoint path", ErrReport)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return addEntry(entrySoak, path, "soak checkpoint "+path)
}

// collected is what WriteReport found in Ginkgo's report.
type collected struct {
	cases  []report.Case
	boards []report.BoardInfo
	notes  []string
	soak   string // the last soak checkpoint filed
}

func decodeEntry(e types.ReportEntry, v any) error {
	var b []byte
	if raw, ok := e.Value.GetRawValue().(entryJSON); ok {
		b = raw.b
	} else {
		b = []byte(e.Value.AsJSON)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: report entry %s at %s: %w", ErrReport, e.Name, e.Location, err)
	}
	return nil
}

// collect gathers the harness entries of every spec; a spec that failed
// without filing a case becomes a failed case, so nothing that went wrong
// is missing from the report.
func collect(suite string, r types.Report) (collected, error) {
	var out collected
	var errs []string
	for _, sr := range r.SpecReports {
		hasCase := false
		for _, e := range sr.ReportEntries {
			var err error
			switch e.Name {
			case entryCase:
				var c report.Case
				if err = decodeEntry(e, &c); err == nil {
					out.cases = append(out.cases, c)
					hasCase = true
				}
			case entryTrace:
				// The trace of the case this spec filed last (Record adds
				// it right after the case).
				var raw json.RawMessage
				if err = decodeEntry(e, &raw); err == nil && hasCase {
					if t := out.cases[len(out.cases)-1].Trace; t != nil {
						t.Chrome = []byte(raw)
					}
				}
			case entryBoard:
				var b report.BoardInfo
				if err = decodeEntry(e, &b); err == nil {
					out.boards = append(out.boards, b)
				}
			case entryNote:
				var s string
				if err = decodeEntry(e, &s); err == nil {
					out.notes = append(out.notes, s)
				}
			case entrySoak:
				var s string
				if err = decodeEntry(e, &s); err == nil {
					out.soak = s
				}
			}
			if err != nil {
				errs = append(errs, err.Error())
			}
		}
		if sr.State.Is(types.SpecStateFailureStates) && sr.LeafNodeType.Is(types.NodeTypeBeforeSuite|types.NodeTypeSynchronizedBeforeSuite) {
			// The health gate (or another suite set-up) failed: no spec ran,
			// so say why in the report instead of leaving it empty.
			out.cases = append(out.cases, failedCase(report.CaseSpec{Suite: suite, Name: "health gate (before the suite)"}, sr))
			continue
		}
		if sr.State.Is(types.SpecStateFailureStates) && !hasCase && sr.LeafNodeType.Is(types.NodeTypeIt) {
			name := sr.FullText()
			out.cases = append(out.cases, failedCase(report.CaseSpec{Suite: suite, Name: strings.TrimPrefix(name, suite+" "), Labels: sr.Labels()}, sr))
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// failedCase is the case of a spec (or suite set-up) that failed before
// it recorded one: the failure and where, verdict fail.
func failedCase(spec report.CaseSpec, sr types.SpecReport) report.Case {
	c := report.NewCase(nil, spec, report.Results{Failure: fmt.Sprintf("%s: %s (%s)", sr.State, sr.Failure.Message, sr.Failure.Location)})
	c.Verdict = report.Fail
	return *c
}

// skipNotes lists what the rack's label filter left out.
func skipNotes(f fixtures.Filter) []string {
	var out []string
	for _, s := range f.Skipped {
		out = append(out, fmt.Sprintf("specs labelled %s skipped: %s", s.Label, s.Reason))
	}
	return out
}

// OnFailure registers diag to run at cleanup of the current node, only if
// the spec failed, attaching its text to the spec's report. Register it
// after the acquisition's own DeferCleanup, so it runs first (cleanups run
// last-in first-out) while the resource still exists.
func OnFailure(name string, diag func() string) {
	ginkgo.DeferCleanup(func() {
		if ginkgo.CurrentSpecReport().Failed() {
			ginkgo.AddReportEntry(name, diag(), ginkgo.ReportEntryVisibilityFailureOrVerbose)
		}
	})
}

// WarmUp returns the warm-up messages for a case of n measured messages:
// the configured warm_up, but at most a fifth of n (a low-rate case must
// not spend its budget warming up), at least 1 when warm_up is set.
func (tc *TestContext) WarmUp(n uint64) uint64 {
	w := uint64(tc.Config.WarmUp)
	if w == 0 {
		return 0
	}
	return max(1, min(w, n/5))
}
