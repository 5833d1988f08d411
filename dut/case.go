package dut

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/tracing"
)

// caseBy names this package in a case's additions.
const caseBy = "dut.Measurement.Case"

// Clocks is the method's clock statement of every dut case.
const Clocks = "controller CLOCK_MONOTONIC at both ends: stimulus hand-over → response taken by the rig"

// ClocksROS2 is the clock statement of a dut case on ROS 2 topics.
const ClocksROS2 = "controller CLOCK_MONOTONIC at both ends: the stimulus's header stamp (written just before its hand-over to the bridge) → the answer carrying it taken by the rig from the bridge; includes the bridge's two hops"

// CaseInfo names a dut case in the report.
type CaseInfo struct {
	Suite, Name string
	Labels      []string
	// Program, if set, adds its restarts, and on a failed verdict the
	// tail of its output.
	Program *Program
	// Trace, if set, is the kernel trace armed over the run (the program
	// marking into it through HILRIG_TRACE_MARKER): a failed case keeps
	// the snapshot around its first missed (else worst) stimulus.
	Trace *tracing.Session
	// Route, if set, is where the stimuli and responses ran, as the
	// caller's rig decides it for a bus case (the controller's board →
	// the program's board, the bus's transport class): the report sets
	// the bus cases of the same path beside the reaction
	// (report.BusOnSamePath). nil: none (a GPIO-only program).
	Route *report.Route
}

// Case is the measurement as one report case (report.NewCase), judged
// against the dut's bounds: the latency bounds on the samples, the miss
// rate, and the ground-truth tolerance on |software p50 − GPIO p50|.
func (m *Measurement) Case(ci CaseInfo) *report.Case {
	d := m.DUT
	in, _ := d.Port(d.Correlation.Input)
	out, _ := d.Port(d.Correlation.Output)
	spec := report.CaseSpec{
		Suite: ci.Suite, Name: ci.Name, Labels: ci.Labels,
		Transport: "dut " + portKind(in) + "→" + portKind(out),
		RateHz:    d.Stimulus.RateHz,
		Method:    report.Method{Kind: kind.OneWay, Clocks: Clocks},
	}
	switch {
	case isROS2(in):
		// The bytes on the wire are the message's; the DDS peer carries them.
		spec.Middleware, spec.Method.Clocks = kind.CycloneDDS, ClocksROS2
		if msg, err := ros2Template(in); err == nil {
			spec.PayloadBytes = int64(len(msg))
		}
	case !in.IsGPIO():
		spec.Middleware, spec.PayloadBytes = kind.Hilrig, int64(in.PayloadOrDefault())
	}
	if b := d.Bounds.Latency(); !b.IsZero() {
		spec.Bounds = &b
	}
	h := report.NewHistogram()
	for _, s := range m.Tally.Samples {
		h.Record(s)
	}
	t := m.Tally
	res := report.Results{Sent: t.Stimuli, Delivered: t.Answered, Lost: t.Missed, Histogram: h, Duration: time.Duration(m.End - m.Start),
		CPUPercent: m.CPUPercent, RSSBytes: m.RSSBytes}
	if len(m.Stimuli) == 0 {
		res.Failure = "no stimulus was sent"
	}
	c := report.NewCase(ci.Route, spec, res)
	a := report.Addition{By: caseBy, Extra: map[report.ExtraKey]float64{
		report.ExtraDUTMissed:     float64(t.Missed),
		report.ExtraDUTMissRate:   t.MissRate(),
		report.ExtraDUTDuplicates: float64(t.Duplicates),
		report.ExtraDUTOutOfOrder: float64(t.OutOfOrder),
		report.ExtraDUTLate:       float64(t.Late),
		report.ExtraDUTUnknown:    float64(t.Unknown + m.Overflow),
	}}
	a.Notes = append(a.Notes, fmt.Sprintf("dut %s on %s: %d stimuli on %s at %g Hz, %s correlation on %s, deadline %s; %d readiness probes",
		d.Name, d.Board, t.Stimuli, in.Name, d.Stimulus.RateHz, d.Correlation.Mode, out.Name, d.Correlation.Deadline, m.Probes))
	if isROS2(in) {
		a.Notes = append(a.Notes, fmt.Sprintf("ROS 2: %s (%s) → %s (%s) on Cyclone DDS in DDS domain %d, reached through hilrig-peer bridge on %s; echo by the header stamp",
			in.Topic, ros2Type(in), out.Topic, ros2Type(out), DDSDomain(d, m.pl), d.Board))
	}
	if m.UsageNote != "" {
		a.Notes = append(a.Notes, m.UsageNote)
	}
	if t.Worst >= 0 && t.Worst < len(m.Stimuli) {
		a.Notes = append(a.Notes, fmt.Sprintf("worst stimulus: seq %d, sent at CLOCK_MONOTONIC %d ns", t.Worst+1, m.Stimuli[t.Worst]))
	}
	if mr := d.Bounds.MaxMissRate; mr != nil {
		ck := report.Check{Bound: "miss rate", Unit: "%", Limit: *mr * 100, Measured: t.MissRate() * 100, Verdict: report.Pass}
		if t.MissRate() > *mr || t.Stimuli == 0 {
			ck.Verdict = report.Fail
		}
		a.Checks = append(a.Checks, ck)
	}
	if d.Correlation.GroundTruth != "" {
		a.Extra[report.ExtraDUTGroundTruthN] = float64(len(m.GroundTruth))
		ck := report.Check{Bound: "GPIO ground truth Δ", Unit: "ns", Limit: float64(d.Bounds.GroundTruthTolerance), Verdict: report.Pass}
		if len(m.GroundTruth) == 0 || len(t.Samples) == 0 {
			ck.Verdict, ck.Note = report.Fail, "no paired edges or no software samples"
		} else {
			gp, sp := median(m.GroundTruth), median(t.Samples)
			a.Extra[report.ExtraDUTGroundTruthP50] = float64(gp)
			a.Extra[report.ExtraDUTGroundTruthDif] = float64(sp - gp)
			ck.Measured = float64(abs(sp - gp))
			a.Notes = append(a.Notes, fmt.Sprintf("GPIO ground truth: %d stimulus edges paired, p50 %s on the wire against %s in software (the software figure adds the rig's wake-up on the response edge)",
				len(m.GroundTruth), report.FormatNs(gp), report.FormatNs(sp)))
			if d.Bounds.GroundTruthTolerance > 0 && ck.Measured > ck.Limit {
				ck.Verdict = report.Fail
			}
		}
		if d.Bounds.GroundTruthTolerance > 0 {
			a.Checks = append(a.Checks, ck)
		}
	}
	if p := ci.Program; p != nil {
		a.Extra[report.ExtraDUTRestarts] = float64(p.Restarts())
	}
	c.Add(a)
	c.Finalize()
	if c.Verdict == report.Fail && ci.Trace != nil {
		ref, err := m.traceRef(ci.Trace)
		if err != nil {
			c.Add(report.Noted(caseBy, "no trace snapshot of the breach: "+err.Error()))
		} else {
			c.Trace = ref
		}
	}
	if c.Verdict == report.Fail && ci.Program != nil {
		if o := ci.Program.OutputTail(20); o != "" {
			c.Add(report.Noted(caseBy, "dut output (last lines):\n"+o))
		}
	}
	return c
}

// traceWindow is how much of the run a breach's snapshot keeps before
// its last miss: one second, the agents' window of a bus case, so one
// stray miss on a loaded machine does not hide the faults around it.
const traceWindow = time.Second

// traceRef keeps the trace of the second up to the last missed stimulus
// (else the worst one) and its deadline, with 2 ms either side, and
// names the program's own markers in it. The last miss, not the first:
// the snapshot is read after the run, and the ring buffer keeps its end.
func (m *Measurement) traceRef(s *tracing.Session) (*report.TraceRef, error) {
	i, why := m.Tally.LastMiss, "last missed stimulus"
	if i < 0 {
		i, why = m.Tally.Worst, "worst stimulus"
	}
	if i < 0 || i >= len(m.Stimuli) {
		return nil, errors.New("no stimulus to keep a window of")
	}
	d := m.DUT
	to := m.Stimuli[i] + int64(d.Correlation.Deadline)
	from := max(to-int64(traceWindow), m.Start)
	snap, err := s.Snapshot(from, to, int64(2*time.Millisecond))
	if err != nil {
		return nil, err
	}
	var marks []string
	for _, e := range snap.Events {
		if e.Kind == tracing.Marker && strings.HasPrefix(e.Text, "hlr dut-") {
			marks = append(marks, strings.TrimSpace(e.Text))
		}
	}
	summary := "the program wrote no marker in the window"
	if len(marks) > 0 {
		summary = "the program's own markers in the window: " + strings.Join(marks, "; ")
	}
	var chrome bytes.Buffer
	if err := tracing.WriteChrome(&chrome, snap.Events); err != nil {
		return nil, err
	}
	return &report.TraceRef{
		Reason:  fmt.Sprintf("%s: seq %d (deadline %s), and up to %s before it", why, i+1, d.Correlation.Deadline, traceWindow),
		Summary: summary, FromNs: snap.FromNs, ToNs: snap.ToNs, Board: d.Board, CPUs: snap.CPUs, BufferKB: snap.BufferKB,
		Method: "tracefs instance armed by the controller over the run; the program marks into it through HILRIG_TRACE_MARKER",
		Chrome: chrome.Bytes(),
	}, nil
}

func portKind(p fixtures.DUTPort) string {
	if p.IsGPIO() {
		return "gpio"
	}
	if isROS2(p) {
		return "ros2"
	}
	return "topic"
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
