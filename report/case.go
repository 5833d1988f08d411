package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
)

// CaseSpec is what a case ran: its name, the traffic's parameters and how
// its latency was measured. The zero value of a field is "not given"
// (omitted from the result file).
type CaseSpec struct {
	Suite  string
	Name   string
	Labels []string
	// Transport names the path in case names and tables ("intra",
	// "shm-copy", "shm-loan", "udp", ...).
	Transport    string
	Middleware   kind.Middleware
	PayloadBytes int64
	RateHz       float64
	Reliability  kind.Reliability
	Subscribers  int
	// Repetition is the case's run of its comparison cell (1..R), 0 for
	// a case that ran once (Case.Repetition).
	Repetition int
	Method     Method
	Bounds     *Bounds
}

// Results are what a case measured, raw: counts, the latency samples (or
// only their summary when nothing else is known), resource use and the
// reason it could not be measured.
type Results struct {
	Sent, Delivered, Lost int64
	// Excluded counts samples dropped for untrustworthy clocks.
	Excluded  int64
	Histogram *Histogram
	// Summary is set when only a summary is known (no Histogram).
	Summary    Summary
	CPUPercent float64
	RSSBytes   int64
	Duration   time.Duration
	Failure    string
}

// NewCase is the one constructor of a Case: where the traffic ran (route,
// as the rig decided it; nil for a case without traffic), what ran (spec)
// and what it measured (res). Callers add notes, checks and figures with
// Add (which records who added them), then Finalize. No other package composes a Case literal (TestOneCaseConstructor
// in cmd/hilrig), so every case's facts arrive through these three typed
// values rather than being set field by field.
func NewCase(route *Route, spec CaseSpec, res Results) *Case {
	c := &Case{
		Suite: spec.Suite, Name: spec.Name, Labels: spec.Labels, Transport: spec.Transport, Middleware: spec.Middleware,
		PayloadBytes: spec.PayloadBytes, RateHz: spec.RateHz, Reliability: spec.Reliability, Subscribers: spec.Subscribers, Repetition: spec.Repetition,
		Method: spec.Method, Bounds: spec.Bounds,
		Sent: res.Sent, Delivered: res.Delivered, Lost: res.Lost, Excluded: res.Excluded, Histogram: res.Histogram,
		Summary: res.Summary, CPUPercent: res.CPUPercent, RSSBytes: res.RSSBytes, Duration: res.Duration, Failure: res.Failure,
	}
	if route != nil {
		rt := *route
		c.Route = &rt
	}
	return c
}

// RepName is the case name of repetition k (1-based) of a comparison
// cell's case named name: "NAME (rep k)", so every repetition keeps its
// own case key while CompareMiddlewares groups them back by baseName.
func RepName(name string, k int) string { return fmt.Sprintf("%s (rep %d)", name, k) }

// baseName is c's name without its repetition suffix.
func baseName(c *Case) string {
	if c.Repetition <= 0 {
		return c.Name
	}
	return strings.TrimSuffix(c.Name, fmt.Sprintf(" (rep %d)", c.Repetition))
}
