package soakrun

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/soak"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// Flags of the soak suite (after `--` with the ginkgo CLI). ginkgo.config
// carries the durations, the checkpoint period and the traffic mix; these
// select the profile and what ginkgo.config has no field for yet (churn,
// soak bounds, resume).
var (
	profileFlag  = flag.String("hilrig.soak-profile", "", "soak profile: smoke (short_duration from ginkgo.config), full (soak.duration), accelerated (1 h, traffic rates ×10); default smoke on the sim rack, full elsewhere")
	windowFlag   = flag.Duration("hilrig.soak-window", 0, "checkpoint window (default: soak.checkpoint from ginkgo.config, at most duration/10 so trends have points)")
	churnFlag    = flag.Duration("hilrig.soak-churn", -1, "restart a subscriber or publisher this often (0 = never; default: twice in smoke, every 30m otherwise)")
	resumeFlag   = flag.String("hilrig.soak-resume", "", "resume into this existing checkpoint JSONL instead of creating a new one")
	outFlag      = flag.String("hilrig.soak-out", "", "checkpoint JSONL to create (default <report_dir>/soak/<run>-<profile>.jsonl, outside the pruned run directories)")
	durationFlag = flag.Duration("hilrig.soak-duration", 0, "override the profile's duration (e.g. a 5m accelerated run to try the 10× rates)")
	progressFlag = flag.Duration("hilrig.soak-progress", time.Minute, "period of the progress line")
	rssBound     = flag.Float64("hilrig.soak-max-rss-slope", 512, "memory-growth bound, KiB/h per agent (Theil–Sen after warm-up)")
	driftBound   = flag.Float64("hilrig.soak-max-drift", 10, "latency drift bound for p50 and p99, %/day (Theil–Sen after warm-up)")
	recovBound   = flag.Duration("hilrig.soak-max-recovery", 2*time.Second, "restart → first delivery bound")
	heartbeat    = flag.Duration("hilrig.soak-heartbeat", 30*time.Second, "a board that sends no agent window for this long is lost: the soak stops with a verdict naming it (0 = never)")
	recoveries   = flag.Int("hilrig.soak-recoveries", 2, "recovery budget: lost boards (missed heartbeats, console panic) power-cycled and brought back per soak; past it, or for a board without power control, the soak fails naming the board")
	heapFlag     = flag.String("hilrig.soak-heap-profile", "", "write the controller's Go heap profile (pprof) to this file at every checkpoint window (go tool pprof -sample_index=inuse_space FILE)")
	dutFlag      = flag.String("hilrig.soak-dut", "", "run the long profile (full or accelerated) on this dut's reaction (duts: of the rack) instead of the traffic mix")
	unlockBound  = flag.Int("hilrig.soak-max-unlocked", 6, "windows allowed with a board's PTP not locked (excluded from latency verdicts)")
	trafficFlag  = flag.String("hilrig.soak-traffic", TrafficMix, "traffic of the configured (full, accelerated) soak: mix (ginkgo.config's traffic_mix) or replay (ginkgo.config's replay: recording, looped on shm; docs/mcap.md)")
)

// Traffic of the configured soak (-hilrig.soak-traffic).
const (
	TrafficMix    = "mix"
	TrafficReplay = "replay"
)

// ReplayTraffic reports whether -hilrig.soak-traffic asks the configured
// soak to replay the recording; an error for a value neither mix nor
// replay.
func ReplayTraffic() (bool, error) {
	switch *trafficFlag {
	case TrafficMix:
		return false, nil
	case TrafficReplay:
		return true, nil
	}
	return false, fmt.Errorf("%w: -hilrig.soak-traffic %q: want mix or replay", ErrPlan, *trafficFlag)
}

// Profile names.
const (
	ProfileSmoke       = "smoke"
	ProfileFull        = "full"
	ProfileAccelerated = "accelerated"
)

// AcceleratedRateFactor multiplies every traffic-mix rate in the
// accelerated profile (1 kHz → 10 kHz): an hour of it records as many
// samples per stream as 10 h of the real mix.
const AcceleratedRateFactor = 10

// Flow is one traffic-mix flow of a plan.
type Flow struct {
	Name      string             // stream name in the checkpoint ("shm-64B-1000Hz-0")
	Transport fixtures.Transport // shm or udp
	Link      string             // rack link it runs over
	Payload   int
	RateHz    float64
	// Middleware is the bus ("" hilrig's own, or a peer: docs/peers.md).
	Middleware string
	// From and To, when set, place the publisher and the subscriber
	// instead of the link's A and B boards.
	From, To string
	// Schedule, when set, is a replayed recording channel's plan
	// (agentproto.Schedule, looped to the soak's end): Payload is then its
	// largest size and RateHz its mean rate.
	Schedule *agentproto.Schedule
}

// ReplayFlow is one channel of a recording for a replay soak
// (steps.ReplayPlan's channels).
type ReplayFlow struct {
	Name     string
	Payload  int     // largest size, bytes
	RateHz   float64 // mean rate
	Schedule *agentproto.Schedule
}

// Replaying is p with its traffic mix replaced by a recording's
// channels, each a flow over the rack's shm link on hilrig's middleware
// whose publisher loops its channel's plan to the soak's end; the
// latency bound is the profile's largest max over the channels'
// payloads. Duration, windows, churn and the other bounds are p's.
func (p *Plan) Replaying(flows []ReplayFlow, rack *fixtures.Rack, prof *fixtures.BoundsProfile) (*Plan, error) {
	q := *p
	q.Flows, q.Notes = nil, append([]string(nil), p.Notes...)
	link := ""
	for _, l := range rack.Links {
		if l.Transport == fixtures.Shm {
			link = l.Name
			break
		}
	}
	if link == "" {
		return nil, fmt.Errorf("%w: rack %s has no shm link for the replay", ErrPlan, rack.Name)
	}
	var maxLat time.Duration
	for _, f := range flows {
		if f.Schedule == nil || f.Schedule.PeriodNs <= 0 {
			return nil, fmt.Errorf("%w: replay flow %s: a soak loops its plan, which needs a period", ErrPlan, f.Name)
		}
		if b, ok := prof.For(fixtures.Shm, f.Payload); ok {
			maxLat = max(maxLat, time.Duration(b.Bounds.Max))
		}
		q.Flows = append(q.Flows, Flow{Name: f.Name, Transport: fixtures.Shm, Link: link, Payload: f.Payload, RateHz: f.RateHz, Schedule: f.Schedule})
	}
	if len(q.Flows) == 0 {
		return nil, fmt.Errorf("%w: the recording has no channel to replay", ErrPlan)
	}
	q.Bounds.MaxLatency = maxLat
	return &q, nil
}

// Plan is a resolved soak: what runs for how long, windowing and bounds.
type Plan struct {
	Profile  string
	Duration time.Duration
	// Window is the checkpoint period; AgentWindow the agents' (shorter)
	// summary period, which sets the resolution of restart recovery.
	Window, AgentWindow time.Duration
	Churn               time.Duration
	Progress            time.Duration
	// Heartbeat is Runner.Heartbeat (-hilrig.soak-heartbeat); Recoveries
	// Runner.Recoveries (-hilrig.soak-recoveries), also the bound on
	// fault windows.
	Heartbeat  time.Duration
	Recoveries int
	Flows      []Flow
	// Bounds judged by soak.Judge. TrendsAsserted is false when the run is
	// too short for a slope in KiB/h or %/day to mean anything (smoke):
	// the trends are then computed and reported, not asserted.
	Bounds         soak.Bounds
	TrendsAsserted bool
	Notes          []string
	// Resume is a checkpoint to resume into; Out the file to create.
	Resume, Out string
}

// HeapProfilePath is -hilrig.soak-heap-profile ("" = none).
func HeapProfilePath() string { return *heapFlag }

// FlagProfile is the profile given on the command line ("" if none).
func FlagProfile() string { return *profileFlag }

// RequestedProfile is the profile the command line asks for: the
// -hilrig.soak-profile flag, else the rack's default (smoke on the sim
// rack, full on a lab rack). -hilrig.soak-duration applies to it only.
func RequestedProfile(rackName string) string {
	if p := *profileFlag; p != "" {
		return p
	}
	if rackName == fixtures.SimRackName {
		return ProfileSmoke
	}
	return ProfileFull
}

// Selection is which soak specs a run of the soak suite starts. Asking
// for a profile runs that profile and nothing else: a duration given for
// the accelerated soak must not stretch the smoke spec past its timeout
// (nor, with the smoke spec failing, skip the soak that was asked for).
type Selection struct {
	// Smoke is true when the smoke spec runs; SmokeTimeout is its
	// SpecTimeout (3 min, or the requested smoke duration plus start-up).
	Smoke        bool
	SmokeTimeout time.Duration
	// Long is the profile the long spec runs ("" = the long spec skips,
	// with SkipReason).
	Long       string
	SkipReason string
	// LongDUT, with Long, is the dut whose reaction the long soak runs
	// instead of the traffic mix (-hilrig.soak-dut; "": the mix).
	LongDUT string
}

// Select resolves which specs the flags start on a rack named rackName.
// No flag: smoke on the sim rack; smoke then full on a lab rack.
func Select(rackName string) Selection {
	s := Selection{SmokeTimeout: 3 * time.Minute}
	switch req := *profileFlag; req {
	case "":
		s.Smoke = true
		if rackName != fixtures.SimRackName {
			s.Long = ProfileFull
		} else {
			s.SkipReason = "the sim rack runs only the smoke soak unless -hilrig.soak-profile=accelerated|full asks for a long one"
		}
	case ProfileSmoke:
		s.Smoke = true
		s.SkipReason = "-hilrig.soak-profile=smoke asks for the smoke soak only"
	default:
		// accelerated, full, or a typo that NewPlan reports by name.
		s.Long = req
	}
	if s.Long != "" {
		s.LongDUT = *dutFlag
	}
	if s.Smoke && RequestedProfile(rackName) == ProfileSmoke && *durationFlag > 0 {
		s.SmokeTimeout = max(s.SmokeTimeout, *durationFlag+2*time.Minute)
	}
	return s
}

// NewPlan resolves the plan for profile ("" = flag, else default for the
// rack) from ginkgo.config and the rack.
func NewPlan(profile string, cfg *fixtures.Config, rack *fixtures.Rack, prof *fixtures.BoundsProfile) (*Plan, error) {
	requested := RequestedProfile(rack.Name)
	if profile == "" {
		profile = requested
	}
	p := &Plan{Profile: profile, Progress: *progressFlag, Resume: *resumeFlag, Out: *outFlag, Heartbeat: *heartbeat,
		Recoveries: max(*recoveries, 0)}
	factor := 1.0
	switch profile {
	case ProfileSmoke:
		p.Duration = cfg.Soak.ShortDuration
		if p.Duration == 0 {
			p.Duration = 30 * time.Second
		}
	case ProfileFull:
		p.Duration = cfg.Soak.Duration
		if p.Duration == 0 {
			return nil, fmt.Errorf("%w: %s: soak.duration is not set (profile full)", ErrPlan, cfg.File)
		}
	case ProfileAccelerated:
		p.Duration, factor = time.Hour, AcceleratedRateFactor
	default:
		return nil, fmt.Errorf("%w: -hilrig.soak-profile %q: want smoke, full or accelerated", ErrPlan, profile)
	}
	if *durationFlag > 0 && profile == requested {
		p.Notes = append(p.Notes, fmt.Sprintf("duration %v set by -hilrig.soak-duration (profile default %v)", *durationFlag, p.Duration))
		p.Duration = *durationFlag
	}
	p.Window = cfg.Soak.Checkpoint
	if p.Window <= 0 {
		p.Window = 10 * time.Second
	}
	if limit := p.Duration / 10; p.Window > limit {
		p.Notes = append(p.Notes, fmt.Sprintf("checkpoint window %v (soak.checkpoint %v capped at duration/10 so the trends have points)", limit, p.Window))
		p.Window = limit
	}
	if *windowFlag > 0 {
		p.Window = *windowFlag
	}
	if p.Window < 100*time.Millisecond {
		return nil, fmt.Errorf("%w: window %v: want at least 100ms", ErrPlan, p.Window)
	}
	// The agents' window sets the resolution of restart recovery. The
	// runner drains every endpoint's windows each checkpoint
	// (rig.Endpoint.TakeWindows) and the rig releases finished endpoints,
	// so a short agent window costs no controller memory over a long soak.
	p.AgentWindow = min(p.Window, 250*time.Millisecond)
	switch c := *churnFlag; {
	case c >= 0:
		p.Churn = c
	case profile == ProfileSmoke:
		p.Churn = p.Duration / 3 // a subscriber, then a publisher restart
	default:
		p.Churn = 30 * time.Minute
	}
	if p.Progress <= 0 || p.Progress > p.Duration/2 && profile == ProfileSmoke {
		p.Progress = max(p.Duration/3, time.Second)
	}
	if len(cfg.TrafficMix) == 0 {
		return nil, fmt.Errorf("%w: %s: traffic_mix is empty: a soak needs traffic", ErrPlan, cfg.File)
	}
	link := func(transport fixtures.Transport) string {
		for _, l := range rack.Links {
			if l.Transport == transport {
				return l.Name
			}
		}
		return ""
	}
	multi := rack.Claims(fixtures.CapMultiHost)
	var maxLat time.Duration
	for i, t := range cfg.TrafficMix {
		n := max(t.Count, 1)
		switch {
		case t.Transport == fixtures.Intra:
			p.Notes = append(p.Notes, fmt.Sprintf("traffic_mix[%d] intra: not run by the soak (intra-process traffic has no agent to observe it)", i))
			continue
		case t.Transport == fixtures.UDP && !multi:
			p.Notes = append(p.Notes, fmt.Sprintf("traffic_mix[%d] udp: skipped, rack %s does not claim multi-host", i, rack.Name))
			continue
		}
		l := link(t.Transport)
		if l == "" {
			return nil, fmt.Errorf("%w: traffic_mix[%d]: rack %s has no %s link", ErrPlan, i, rack.Name, t.Transport)
		}
		if b, ok := prof.For(t.Transport, int(t.Payload)); ok && time.Duration(b.Bounds.Max) > maxLat {
			maxLat = time.Duration(b.Bounds.Max)
		}
		for k := range n {
			p.Flows = append(p.Flows, Flow{Name: fmt.Sprintf("%s-%s-%gHz-%d", t.Transport, sizeName(int(t.Payload)), t.RateHz*factor, k),
				Transport: t.Transport, Link: l, Payload: int(t.Payload), RateHz: t.RateHz * factor})
		}
	}
	if len(p.Flows) == 0 {
		return nil, fmt.Errorf("%w: no traffic_mix flow can run on rack %s", ErrPlan, rack.Name)
	}
	zero := int64(0)
	unl := *unlockBound
	p.Bounds = soak.Bounds{WarmUp: min(p.Duration/5, 30*time.Minute), MaxLost: &zero, MaxLatency: maxLat,
		MaxRestartRecovery: *recovBound, MaxUnlockedWindows: &unl, MaxFaultWindows: &p.Recoveries}
	// A slope in KiB/h or %/day from under an hour of windows is noise
	// (GC and page-cache steps dominate); assert trends only on real soaks.
	p.TrendsAsserted = p.Duration-p.Bounds.WarmUp >= 45*time.Minute
	if p.TrendsAsserted {
		p.Bounds.MaxRSSSlopeKiBPerHour = *rssBound
		p.Bounds.MaxP50DriftPctPerDay = *driftBound
		p.Bounds.MaxP99DriftPctPerDay = *driftBound
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("%s soak of %v: RSS and latency trends are reported, not asserted (under 45 min after warm-up)", profile, p.Duration))
	}
	return p, nil
}

// String is a one-line description for the Ginkgo output.
func (p *Plan) String() string {
	var fl []string
	for _, f := range p.Flows {
		fl = append(fl, f.Name+"@"+f.Link)
	}
	return fmt.Sprintf("soak %s: %v, window %v (agents %v), churn %v, flows [%s]", p.Profile, p.Duration, p.Window,
		p.AgentWindow, p.Churn, strings.Join(fl, " "))
}

func sizeName(n int) string { return bytesize.Exact(int64(n), "") }

// RigMaxWindows is the rig.Options.MaxWindows a soak of this plan needs:
// every endpoint buffers the agent windows of one drain period (the
// runner folds them into the open soak window every DefaultDrain, not
// once per checkpoint) and of a restart or the final drain, each bounded
// by 30 s; twice that plus margin, so no window is dropped. The bound is
// per endpoint and independent of the checkpoint window and the soak's
// length: a few hundred windows, not one checkpoint period's thousands.
func (p *Plan) RigMaxWindows() int {
	d := DefaultDrain(p.Window, 0)
	per := int((d+p.AgentWindow-1)/p.AgentWindow) + int(30*time.Second/p.AgentWindow)
	return 2*per + 64
}

// Route says where a flow of a transport runs on a middleware: publisher
// board, subscriber board and link, or an error when it cannot.
type Route func(transport fixtures.Transport) (from, to, link string, err error)

// OnMiddleware is p's traffic mix on peer middleware mw: every flow route
// accepts, renamed "<mw>-<flow>" and placed where route says; the others
// are dropped with a note. Duration, windows, churn and bounds are p's
// (a caller may shorten Duration, then call Rescale). An error when no
// flow can run on mw.
func (p *Plan) OnMiddleware(mw string, route Route) (*Plan, error) {
	q := *p
	q.Flows, q.Notes = nil, append([]string(nil), p.Notes...)
	for _, f := range p.Flows {
		from, to, link, err := route(f.Transport)
		if err != nil {
			q.Notes = append(q.Notes, fmt.Sprintf("flow %s not run on %s: %v", f.Name, mw, err))
			continue
		}
		f.Name, f.Middleware, f.From, f.To, f.Link = mw+"-"+f.Name, mw, from, to, link
		q.Flows = append(q.Flows, f)
	}
	if len(q.Flows) == 0 {
		return nil, fmt.Errorf("%w: no traffic_mix flow can run on %s", ErrPlan, mw)
	}
	return &q, nil
}

// Shorten sets the plan's duration to d (when shorter) and rescales what
// derives from it as NewPlan does: the checkpoint window (≤ d/10), the
// agents' window, the churn period (d/3) and progress.
func (p *Plan) Shorten(d time.Duration) {
	if d <= 0 || d >= p.Duration {
		return
	}
	p.Notes = append(p.Notes, fmt.Sprintf("duration %v (shortened from %v)", d, p.Duration))
	p.Duration = d
	p.Window = min(p.Window, d/10)
	p.AgentWindow = min(p.Window, 250*time.Millisecond)
	if p.Churn > 0 {
		p.Churn = d / 3
	}
	p.Progress = max(d/3, time.Second)
	p.Bounds.WarmUp = min(p.Bounds.WarmUp, d/5)
}
