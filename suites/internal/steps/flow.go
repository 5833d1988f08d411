package steps

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
)

// Transports the suites sweep. ShmCopy and ShmLoan are the shared-memory
// transport with Publisher.Send (one copy) and Publisher.Loan (zero copy).
const (
	Intra   = "intra"
	ShmCopy = "shm-copy"
	ShmLoan = "shm-loan"
	UDP     = "udp"
)

// BandwidthCap bounds payload × rate of a paced latency case (bytes/s):
// above it a case measures queueing under saturation, which is the
// throughput suite's job, so suites skip it with that reason.
const BandwidthCap = 100e6

// AllTransports in report order.
var AllTransports = []string{Intra, ShmCopy, ShmLoan, UDP}

// Params describe one flow to measure.
type Params struct {
	// Transport is Intra, ShmCopy, ShmLoan or UDP.
	Transport string
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
}

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

// Route says where a transport's flow runs on this rack: publisher board,
// subscriber board and (shm/udp) the link.
func (rc *RigContext) Route(transport string) (from, to, link string, err error) {
	switch transport {
	case Intra:
		b := rc.Rack.Boards[0].Name
		return b, b, "", nil
	case ShmCopy, ShmLoan:
		l, err := linkFor(rc.Rack, "shm")
		if err != nil {
			return "", "", "", err
		}
		return l.A, l.B, l.Name, nil
	case UDP:
		l, err := linkFor(rc.Rack, "udp")
		if err != nil {
			return "", "", "", err
		}
		return l.A, l.B, l.Name, nil
	}
	return "", "", "", fmt.Errorf("steps: transport %q: want one of %v", transport, AllTransports)
}

// Start starts the flow described by p (subscribers first, attached,
// then the publisher) and returns without waiting for it to end.
func (rc *RigContext) Start(ctx context.Context, p Params) (*rig.Flow, string, string, error) {
	from, to, link, err := rc.Route(p.Transport)
	if err != nil {
		return nil, "", "", err
	}
	if p.Subscribers <= 0 {
		p.Subscribers = 1
	}
	if p.Window == 0 {
		p.Window = rc.Config.Window
	}
	if p.Drain == 0 {
		p.Drain = 3 * time.Second
	}
	spec := rig.FlowSpec{Name: rc.name("f"), From: from, BestEffort: p.BestEffort, Payload: p.Payload,
		RateHz: p.RateHz, Count: p.Count + p.WarmUp, WarmUp: p.WarmUp, Markers: p.Markers, Window: p.Window,
		Drain: p.Drain, Duration: p.Duration, Latency: latencyMode(rc.Rack, from, to)}
	for range p.Subscribers {
		spec.To = append(spec.To, to)
	}
	for _, b := range append([]string{from}, spec.To...) {
		if _, err := rc.Agent(ctx, b); err != nil { // remembered for diagnostics
			return nil, "", "", err
		}
	}
	switch {
	case p.Transport == Intra:
		spec.Transport = "intra" // the rig runs both ends in from's agent
	case p.Transport == UDP && p.BatchBytes > 0:
		spec.Link = link
		spec.UDP = &middleware.UDPConfig{BatchBytes: p.BatchBytes}
	default:
		spec.Link = link
		if p.Transport == ShmLoan {
			spec.Send = agentproto.SendLoan
		}
	}
	f, err := rc.Rig.Flow(ctx, spec)
	return f, from, to, err
}

// Measure runs the flow p to its end and returns the case named name,
// with its method and the rack's bounds for the transport and payload
// (best-effort flows have their loss reported, not bounded). Blocks.
func (rc *RigContext) Measure(ctx context.Context, name string, p Params) (*Ran, error) {
	var gate *ptpGate
	if from, to, _, err := rc.Route(p.Transport); err == nil && rc.gated(from, to) {
		// Watch both boards' PTP lock for the flow's whole life, from
		// before its first window opens to after its last one closes
		// (boards whose ptp4l is on the board through their agent).
		w := p.Window
		if w == 0 {
			w = rc.Config.Window
		}
		if gate, err = rc.startGate(ctx, from, to, w); err != nil {
			return nil, err
		}
		defer gate.close()
	}
	t0 := time.Now()
	f, from, to, err := rc.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	res, werr := f.Wait(ctx)
	run := &Ran{Result: res, Flow: f, From: from, To: to, Started: t0}
	if res == nil {
		return run, werr
	}
	c := res.Case(rc.Suite, name, f.Spec)
	c.Transport = p.Transport
	c.Method = rc.Method(from, to)
	if gate != nil {
		gate.settle(ctx, res.Windows)
		gate.close() // judge on a finished series
		c.Method.Clocks += "; samples gated per agent window (windows not locked throughout excluded)"
		if _, err := GateWindows(c, res.Windows, res.Subscribers, gate.mon, from, to); err != nil {
			// The merged, ungated distribution stays for diagnosis; the
			// case fails because its samples could not be vetted.
			c.Failure = err.Error()
		}
	}
	if b, ok := rc.Bounds(p.Transport, p.Payload); ok {
		if p.BestEffort {
			b.MaxLost = nil
			c.Notes = append(c.Notes, "best effort: loss is reported, not bounded")
		}
		c.Bounds = &b
	} else {
		c.Notes = append(c.Notes, fmt.Sprintf("bounds profile %s has no entry for %s at %d B: reported, not judged", rc.Profile.Name, p.Transport, p.Payload))
	}
	c.Notes = append(c.Notes, fmt.Sprintf("publisher on %s, subscriber(s) on %s", from, to))
	if p.WarmUp > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d warm-up messages sent first, not in the distribution", p.WarmUp))
	}
	if werr != nil {
		c.Failure = werr.Error()
	}
	run.Case = c
	return run, nil
}

// sameHost reports whether two boards share a kernel (and so a
// CLOCK_MONOTONIC): local and netns boards run on the controller's
// machine; ssh boards on their host.
func sameHost(rack *fixtures.Rack, a, b string) bool {
	if a == b {
		return true
	}
	host := func(n string) string {
		bd, err := rack.Board(n)
		if err != nil {
			return n
		}
		re, err := fixtures.ParseReach(bd.Reach)
		if err != nil || re.Kind != fixtures.ReachSSH {
			return "controller"
		}
		return re.Host
	}
	return host(a) == host(b)
}

func latencyMode(rack *fixtures.Rack, from, to string) string {
	if sameHost(rack, from, to) {
		return "mono"
	}
	return "clock"
}

// Method says how the one-way latency between from and to is measured:
// on one host both stamps come from CLOCK_MONOTONIC of one kernel (the
// uncertainty is one clock read); across hosts from the boards' stamp
// clocks, which must be PTP-disciplined.
func (rc *RigContext) Method(from, to string) report.Method {
	if sameHost(rc.Rack, from, to) {
		return report.Method{Kind: report.OneWay, UncertaintyNs: ClockReadNs(),
			Clocks: fmt.Sprintf("CLOCK_MONOTONIC of one kernel (%s → %s on the same host)", from, to)}
	}
	m := report.Method{Kind: report.OneWay}
	fb, _ := rc.Rack.Board(from)
	stamp := "realtime"
	if fb != nil && fb.Clock.Stamp != "" {
		stamp = fb.Clock.Stamp
	}
	m.Clocks = fmt.Sprintf("CLOCK_%s of %s and %s", upper(stamp), from, to)
	if rc.Rack.Claims(fixtures.CapPTP) {
		// Measure gates the samples per agent window, says so in Clocks and
		// replaces the uncertainty with the monitored bound (GateWindows);
		// 2×max_offset is the a-priori bound for callers that do not gate.
		m.Clocks += ", disciplined by ptp4l"
		if rc.Rack.PTP != nil && rc.Rack.PTP.MaxOffset > 0 {
			m.UncertaintyNs = 2 * int64(rc.Rack.PTP.MaxOffset)
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

var clockReadNs atomic.Int64

// ClockReadNs is the p99 of the interval between two back-to-back
// CLOCK_MONOTONIC reads on this machine (measured once): the error a
// same-clock one-way sample can carry from the stamps themselves.
func ClockReadNs() int64 {
	if v := clockReadNs.Load(); v > 0 {
		return v
	}
	h := report.NewHistogram()
	for range 20000 {
		a := middleware.MonoNow()
		h.Record(middleware.MonoNow() - a)
	}
	v := max(h.ValueAtQuantile(99), 1)
	clockReadNs.Store(v)
	return v
}

// SizeName renders a payload size for case names: "64B", "4KiB", "1MiB".
func SizeName(n int) string {
	s := fixtures.ByteSize(n).String()
	if s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		s += "B"
	}
	return s
}
