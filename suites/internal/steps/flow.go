package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/live"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/ros2/rostopic"
	"github.com/hilrig/hilrig/suites/internal/harness"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// BandwidthCap bounds payload × rate of a paced latency case (bytes/s):
// above it a case measures queueing under saturation, which is the
// throughput suite's job, so suites skip it with that reason.
const BandwidthCap = 100e6

// Params describe one flow to measure.
type Params struct {
	// Path is Intra, ShmCopy, ShmLoan or UDP.
	Path Path
	// BestEffort selects best-effort QoS (default reliable).
	BestEffort bool
	// Payload in bytes (≥ 8); RateHz 0 = as fast as possible.
	Payload int
	RateHz  float64
	// Count measured messages; WarmUp unmeasured ones sent first.
	Count, WarmUp uint64
	// Subscribers (default 1), all on the link's B board.
	Subscribers int
	// Markers toggles the boards' tx/rx marker lines.
	Markers bool
	// Window is the agents' summary period (default the config's).
	Window time.Duration
	// Batch coalesces UDP messages (BatchBytes, 0 = off) — UDP only.
	BatchBytes int
	// Drain bounds the subscribers' wait after the publisher's last
	// message (default 3 s).
	Drain time.Duration
	// Duration bounds the run instead of Count (Count 0: run until
	// stopped or Duration).
	Duration time.Duration
	// Judge selects what of the rack's bounds judge the case (default
	// JudgeLatency).
	Judge Judge
	// ColdPeer: on a peer, every endpoint opens its own participant
	// (discovery from cold; rig.Traffic.ColdPeer).
	ColdPeer bool
	// ROS2 makes the flow a ROS 2 topic on Path's DDS peer
	// (rig.Traffic.ROS2): BestEffort must match its profile and Payload
	// is its message size (fixtures.ROS2Topic.Size).
	ROS2 *rostopic.Topic
	// Bridge puts a `hilrig bridge` process between the publisher and the
	// subscriber (rig.BridgeSpec): ROS2 is the topic, Path.Middleware its
	// ROS 2 side's DDS peer, Path.Transport hilrig's side.
	Bridge *rig.BridgeSpec

	// untraced runs the flow with the kernel trace off whatever the
	// config says: the reference run of trace_overhead.
	untraced bool
	// schedule replaces Payload and RateHz on the publisher, and replay
	// adds its notes to the case (replay.go).
	schedule *agentproto.Schedule
	replay   *replayFlow
}

// FlowBudget is what a paced one-way case at rateHz (Hz) takes: the
// measured message count n (tc.Messages), the unmeasured warm-up (tc.WarmUp)
// and the spec's timeout, the flow's own duration at that rate plus two
// minutes for the rig's start and the case's report.
func FlowBudget(tc *harness.TestContext, rateHz float64) (n, warm uint64, timeout time.Duration) {
	n, _ = tc.Messages(rateHz)
	warm = tc.WarmUp(n)
	return n, warm, time.Duration(float64(n+warm)/rateHz*float64(time.Second)) + 2*time.Minute
}

// ROS2Name names the one-way case of ros2_topics entry rt (a suite
// prefixes its peer): "ros2 <name> [<type>, <profile>] @ <rate> Hz one-way".
func ROS2Name(rt fixtures.ROS2Topic) string {
	return fmt.Sprintf("ros2 %s [%s, %s] @ %g Hz one-way", rt.Name, rt.Type, rt.Profile, rt.RateHz)
}

// ROS2Params is the one-way flow of ros2_topics entry rt on path, n
// measured and warm unmeasured messages, carried as topic (rt.Topic(),
// possibly renamed): payload rt.Size(), best effort unless topic's profile
// is reliable (Params.ROS2).
func ROS2Params(rt fixtures.ROS2Topic, topic rostopic.Topic, path Path, n, warm uint64) (Params, error) {
	size, err := rt.Size()
	if err != nil {
		return Params{}, fmt.Errorf("ros2 topic %s: %w", rt.Name, err)
	}
	return Params{Path: path, BestEffort: !topic.Profile.Reliable(), Payload: size, RateHz: rt.RateHz, Count: n, WarmUp: warm, ROS2: &topic}, nil
}

// Judge is which of the rack profile's bounds a flow's case is judged
// against.
type Judge int

const (
	// JudgeLatency: the entry's bounds (latency, loss, throughput, CPU);
	// a best-effort flow's loss is reported, not bounded.
	JudgeLatency Judge = iota
	// JudgeThroughput: throughput, message rate, CPU and (reliable) loss
	// only — a flow as fast as the publisher can send measures queueing
	// under saturation as latency, which is reported, not judged.
	JudgeThroughput
	// JudgeScope: scope agreement and loss only — the latency bounds are
	// the latency suite's, and markers add their own cost.
	JudgeScope
)

// Ran is a measured flow: the rig's result and the case built from it.
type Ran struct {
	Case   *report.Case
	Result *rig.FlowResult
	Flow   *rig.Flow
	// From and To are the boards.
	From, To string
	// Started is when the publisher was started.
	Started time.Time
}

// start starts the flow described by p (subscribers first, attached,
// then the publisher) and returns without waiting for it to end.
func start(ctx context.Context, env *Env, p Params) (*rig.Flow, string, string, error) {
	from, to, link, err := Route(env.Rack, p.Path)
	if err != nil {
		return nil, "", "", err
	}
	if p.Subscribers <= 0 {
		p.Subscribers = 1
	}
	if p.Window == 0 {
		p.Window = env.Config.Window
	}
	if p.Drain == 0 {
		p.Drain = 3 * time.Second
	}
	spec := rig.FlowSpec{Traffic: rig.Traffic{From: from, Link: link, Transport: p.Path.Transport, Send: p.Path.Send,
		BestEffort: p.BestEffort, Payload: p.Payload, RateHz: p.RateHz, Count: p.Count + p.WarmUp, WarmUp: p.WarmUp,
		Markers: p.Markers, Window: p.Window, Duration: p.Duration, Middleware: p.Path.Middleware, ColdPeer: p.ColdPeer, ROS2: p.ROS2},
		Drain: p.Drain, Latency: LatencyClock(env.Rack, from, to), Bridge: p.Bridge}
	for range p.Subscribers {
		spec.To = append(spec.To, to)
	}
	if p.Path.Transport == fixtures.UDP && p.BatchBytes > 0 {
		spec.UDP = &rig.UDPConfig{BatchBytes: p.BatchBytes}
	}
	if !p.untraced {
		spec.Trace = traceSpec(env, p)
	}
	spec.HugePages = env.Config.HugePages.On()
	spec.Schedule = p.schedule
	if env.Config.Record.On() {
		spec.Stamps = RecordStamps
	}
	// The stage hooks exist on shared memory only; udp would send empty stamps.
	spec.Stages = env.Config.Stages.On() && (p.Path.Transport == fixtures.Shm || p.Path.Transport == fixtures.Intra) && (p.Path.Middleware == "" || p.Path.Middleware == agentproto.MiddlewareHilrig)
	f, err := env.Rig.Flow(ctx, spec)
	return f, from, to, err
}

// Measure runs the flow p to its end and returns the case named name,
// with its method and the rack's bounds for the transport and payload
// (best-effort flows have their loss reported, not bounded). Blocks.
func Measure(ctx context.Context, env *Env, name string, p Params) (*Ran, error) {
	var ref *report.Summary // the same flow untraced, for trace_overhead
	if env.Config != nil && env.Config.TraceOverhead.On() && !p.untraced && traceSpec(env, p) != nil {
		q := p
		q.untraced = true
		r, err := Measure(ctx, env, name+" (untraced reference)", q)
		if err != nil {
			return nil, fmt.Errorf("trace overhead: untraced reference run: %w", err)
		}
		if r != nil && r.Case != nil && r.Case.Histogram != nil && r.Case.Histogram.Count() > 0 {
			s := r.Case.Summary
			ref = &s
		}
	}
	var gate *ptpGate
	if from, to, _, err := Route(env.Rack, p.Path); err == nil && gated(env.Rack, from, to) {
		// Watch both boards' PTP lock for the flow's whole life, from
		// before its first window opens to after its last one closes
		// (boards whose ptp4l is on the board through their agent).
		w := p.Window
		if w == 0 {
			w = env.Config.Window
		}
		if gate, err = startGate(ctx, env, from, to, w); err != nil {
			return nil, err
		}
		defer gate.close()
	}
	t0 := time.Now()
	f, from, to, err := start(ctx, env, p)
	if err != nil {
		return nil, err
	}
	period := p.Window
	if period == 0 && env.Config != nil {
		period = env.Config.Window
	}
	subs := make([]windowSource, len(f.Subscribers))
	for i, e := range f.Subscribers {
		subs[i] = e
	}
	var ptpFeed func(*live.Metrics)
	if gate != nil {
		ptpFeed = gate.feedLive
	}
	stopLive := feedLive(harness.Live(), name, subs, period, ptpFeed)
	res, werr := f.Wait(ctx)
	stopLive()
	run := &Ran{Result: res, Flow: f, From: from, To: to, Started: t0}
	if res == nil {
		return run, werr
	}
	var g *gateOutcome
	if gate != nil {
		gate.settle(ctx, res.Windows)
		gate.close() // judge on a finished series
		g = &gateOutcome{boards: []string{from, to}, judge: gate.mon}
		g.res, g.hist, g.err = gateWindows(res.Windows, res.Subscribers, gate.mon, from, to)
	}
	run.Case = flowCase(env, name, p, run, g, werr)
	if ref != nil {
		traceOverhead(run.Case, *ref)
	}
	return run, nil
}

// traceOverhead puts the latency cost of the armed trace on c: its own
// p50/p99 (armed) against ref's, the same flow run untraced just before
// in this run. On the kept snapshot when there is one, else in a note.
func traceOverhead(c *report.Case, ref report.Summary) {
	o := &report.TraceOverhead{OffP50Ns: ref.P50, OffP99Ns: ref.P99, ArmedP50Ns: c.Summary.P50, ArmedP99Ns: c.Summary.P99,
		Method: fmt.Sprintf("the same flow run untraced just before, in this run (%d and %d samples); trace_overhead in ginkgo.config", ref.Count, c.Summary.Count)}
	if c.Trace != nil {
		c.Trace.Overhead = o
		return
	}
	c.Add(report.Noted("steps.traceOverhead", fmt.Sprintf("tracing overhead in this run: p50 %s off → %s armed, p99 %s off → %s armed (%s)",
		report.FormatNs(o.OffP50Ns), report.FormatNs(o.ArmedP50Ns), report.FormatNs(o.OffP99Ns), report.FormatNs(o.ArmedP99Ns), o.Method)))
}

// LatencyClock is the clocks a flow from → to measures latency on: one
// CLOCK_MONOTONIC when the boards share a kernel, else the boards' stamp
// clocks (fixtures.Rack.SameKernel).
func LatencyClock(rack *fixtures.Rack, from, to string) agentproto.LatencyClock {
	if rack.SameKernel(from, to) {
		return agentproto.LatencyMono
	}
	return agentproto.LatencyStamp
}

// Method says how the one-way latency between from and to is measured:
// on one kernel (fixtures.Rack.SameKernel) both stamps come from its
// CLOCK_MONOTONIC (the uncertainty is one clock read); across kernels —
// other hosts, QEMU guests — from the boards' stamp clocks, which must be
// PTP-disciplined.
func Method(rack *fixtures.Rack, from, to string) report.Method {
	if rack.SameKernel(from, to) {
		return report.Method{Kind: report.OneWay, UncertaintyNs: rig.ClockReadNs(),
			Clocks: fmt.Sprintf("CLOCK_MONOTONIC of one kernel (%s → %s on the same host)", from, to)}
	}
	m := report.Method{Kind: report.OneWay}
	fb, _ := rack.Board(from)
	stamp := "realtime"
	if fb != nil && fb.Clock.Stamp != "" {
		stamp = fb.Clock.Stamp
	}
	m.Clocks = fmt.Sprintf("CLOCK_%s of %s and %s", upper(stamp), from, to)
	if rack.Claims(fixtures.CapPTP) {
		// Measure gates the samples per agent window, says so in Clocks and
		// replaces the uncertainty with the monitored bound (GateWindows);
		// 2×max_offset is the a-priori bound for callers that do not gate.
		m.Clocks += ", disciplined by ptp4l"
		if rack.PTP != nil && rack.PTP.MaxOffset > 0 {
			m.UncertaintyNs = 2 * int64(rack.PTP.MaxOffset)
		}
	} else {
		m.Clocks += ", NOT synchronised (rack claims no ptp)"
	}
	return m
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// SizeName renders a payload size for case names: "64B", "4KiB", "1MiB".
func SizeName(n int) string { return bytesize.Exact(int64(n), "") }

// traceSpec arms the agents' kernel trace as ginkgo.config's trace asks
// (nil when off): on-breach against the case's own max and p99 bounds
// (a case without them traces only its worst window), worst-window
// always.
func traceSpec(env *Env, p Params) *agentproto.TraceSpec {
	switch env.Config.Trace {
	case fixtures.TraceOnBreach, fixtures.TraceWorstWindow:
	default:
		return nil
	}
	t := &agentproto.TraceSpec{Mode: string(env.Config.Trace), BufferKB: env.Config.TraceBufferKB}
	if b, ok := env.Bounds(p.Path.Transport, p.Payload); ok {
		t.MaxNs, t.P99Ns = int64(b.Max), int64(b.P99)
	}
	return t
}
