// Package reportmatch holds the gomega matchers the suites assert bounds
// with. Every failure message prints the whole distribution line (count, min,
// p50, p90, p99, p99.9, max, mean, stddev, lost, method), not just the number
// that failed, so a red test tells what the distribution looked like.
//
// Matchers accept a *report.Case or report.Case (latency and loss), a
// report.Summary or *report.Histogram (latency only; loss matchers need a
// Case). The binary must never import this package (it pulls in gomega).
//
// A matcher value remembers the last actual it matched to build its message;
// use each matcher in one assertion at a time (the normal Expect(...).To(...)
// pattern), not concurrently from several goroutines.
package reportmatch

import (
	"fmt"
	"time"

	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/hilrig/hilrig/report"
)

// state carries what the last Match saw into the message template.
type state struct {
	Want string // "have p99 below 1ms"
	Name string // `case "latency/x"` or "distribution"
	Got  string // "p99 = 1.2ms"
	Line string // whole distribution line
}

const tmpl = `Expected {{.Data.Name}} {{.To}} {{.Data.Want}}{{if .Failure}}, but {{.Data.Got}}{{else}} ({{.Data.Got}}){{end}}
    {{.Data.Line}}`

// view is what a matcher sees of its actual.
type view struct {
	name    string
	sum     report.Summary
	line    string
	hasLoss bool
	lost    int64
	sent    int64
}

func viewOf(actual any) (view, error) {
	switch a := actual.(type) {
	case *report.Case:
		if a == nil {
			return view{}, fmt.Errorf("reportmatch: nil *report.Case")
		}
		s := a.Summary
		if a.Histogram != nil && s.Count == 0 {
			s = a.Histogram.Summary()
		}
		return view{name: fmt.Sprintf("case %q", a.Key()), sum: s, line: a.DistributionLine(), hasLoss: true, lost: a.Lost, sent: a.Sent}, nil
	case report.Case:
		return viewOf(&a)
	case report.Summary:
		return view{name: "distribution", sum: a, line: a.Line() + " [method not given]"}, nil
	case *report.Summary:
		if a == nil {
			return view{}, fmt.Errorf("reportmatch: nil *report.Summary")
		}
		return viewOf(*a)
	case *report.Histogram:
		if a == nil {
			return view{}, fmt.Errorf("reportmatch: nil *report.Histogram")
		}
		return viewOf(a.Summary())
	default:
		return view{}, fmt.Errorf("reportmatch: want *report.Case, report.Case, report.Summary or *report.Histogram, got %T", actual)
	}
}

func below(stat string, d time.Duration, pick func(report.Summary) int64) types.GomegaMatcher {
	st := &state{Want: fmt.Sprintf("have %s below %s", stat, report.FormatNs(int64(d)))}
	return gcustom.MakeMatcher(func(actual any) (bool, error) {
		v, err := viewOf(actual)
		if err != nil {
			return false, err
		}
		st.Name, st.Line = v.name, v.line
		if v.sum.Count == 0 {
			st.Got = "it has no samples"
			return false, nil
		}
		got := pick(v.sum)
		st.Got = fmt.Sprintf("%s = %s", stat, report.FormatNs(got))
		return got < int64(d), nil
	}).WithTemplate(tmpl, st)
}

// HaveP50Below succeeds when the median is strictly below d. An empty
// distribution fails (never passes silently).
func HaveP50Below(d time.Duration) types.GomegaMatcher {
	return below("p50", d, func(s report.Summary) int64 { return s.P50 })
}

// HaveP99Below succeeds when the 99th percentile is strictly below d.
func HaveP99Below(d time.Duration) types.GomegaMatcher {
	return below("p99", d, func(s report.Summary) int64 { return s.P99 })
}

// HaveP999Below succeeds when the 99.9th percentile is strictly below d.
func HaveP999Below(d time.Duration) types.GomegaMatcher {
	return below("p99.9", d, func(s report.Summary) int64 { return s.P999 })
}

// HaveMaxBelow succeeds when the largest sample is strictly below d.
func HaveMaxBelow(d time.Duration) types.GomegaMatcher {
	return below("max", d, func(s report.Summary) int64 { return s.Max })
}

// HaveJitterBelow succeeds when the jitter (P99 − P50, see report.Summary)
// is strictly below d.
func HaveJitterBelow(d time.Duration) types.GomegaMatcher {
	return below("jitter (p99−p50)", d, func(s report.Summary) int64 { return s.Jitter })
}

// HaveNoLoss succeeds when the case lost no message (by sequence numbers)
// and something was sent or delivered (an idle case is not "no loss").
func HaveNoLoss() types.GomegaMatcher { return lossAtMost(0, "have no loss") }

// HaveLossAtMost succeeds when the case lost at most n messages.
func HaveLossAtMost(n int64) types.GomegaMatcher {
	return lossAtMost(n, fmt.Sprintf("have lost at most %d messages", n))
}

func lossAtMost(n int64, want string) types.GomegaMatcher {
	st := &state{Want: want}
	return gcustom.MakeMatcher(func(actual any) (bool, error) {
		v, err := viewOf(actual)
		if err != nil {
			return false, err
		}
		if !v.hasLoss {
			return false, fmt.Errorf("reportmatch: %s needs a *report.Case (loss counts), got %T", want, actual)
		}
		st.Name, st.Line = v.name, v.line
		if v.sent == 0 && v.sum.Count == 0 {
			st.Got = "nothing was sent"
			return false, nil
		}
		st.Got = fmt.Sprintf("lost = %d of %d sent", v.lost, v.sent)
		return v.lost <= n, nil
	}).WithTemplate(tmpl, st)
}

// MeetBounds succeeds when the case's verdict against its own Bounds (see
// report.Case.Finalize) is not a failure; the message lists every check.
func MeetBounds() types.GomegaMatcher {
	st := &state{Want: "meet its bounds"}
	return gcustom.MakeMatcher(func(c *report.Case) (bool, error) {
		if c == nil {
			return false, fmt.Errorf("reportmatch: nil *report.Case")
		}
		if c.Bounds != nil && c.Checks == nil {
			c.Finalize()
		}
		st.Name, st.Line = fmt.Sprintf("case %q", c.Key()), c.DistributionLine()
		st.Got = "verdict " + string(c.Verdict)
		for _, ck := range c.Checks {
			st.Got += "; " + ck.String()
		}
		if c.Failure != "" {
			st.Got += "; failure: " + c.Failure
		}
		return c.Verdict != report.Fail, nil
	}).WithTemplate(tmpl, st)
}
