package steps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// ReplayChannel is one channel of a recording as a publisher's plan.
type ReplayChannel struct {
	Topic string
	// Type is the channel's schema name ("sensor_msgs/msg/Imu"), "" when
	// it has none.
	Type string
	// Plan is the channel's sends over one pass: offsets after the
	// recording's first message of the span (scaled by the rate factor)
	// and payload sizes.
	Plan agentproto.Schedule
	// MaxSize is its largest payload; Bytes the payload bytes of one
	// pass; Padded how many messages were below the smallest size a
	// publisher sends (agentproto.PeerHeaderBytes) and were padded.
	MaxSize int
	Bytes   int64
	Padded  int
}

// ReplayPlan is a recording turned into load: one flow per channel.
type ReplayPlan struct {
	// Source says where the recording came from.
	Source string
	// Span is the stretch of the recording replayed (log time, before
	// scaling); Scale the rate factor; Loops the passes.
	Span     time.Duration
	Scale    float64
	Loops    int
	Channels []ReplayChannel
}

// ErrReplay wraps a recording that cannot be replayed.
var ErrReplay = errors.New("steps: replay")

// replaySample is one message of a channel: when and how big.
type replaySample struct {
	logNs, atNs int64
	size        int
}

// LoadReplay reads an MCAP recording from r (front to back, every CRC
// checked: recording/mcap's stream reader) and plans its first span of
// log time: per channel, each message's publish time (its log time when
// the publish time is 0), relative to the span's first publish time over
// every channel (so the channels keep their phase) and divided by scale,
// and its payload size. A channel keeps at most
// agentproto.MaxScheduleLen messages of the span (ErrReplay past that:
// replay a shorter span). Payload bytes are not kept: the agents send
// their own pattern of the recorded sizes. Blocks on r.
func LoadReplay(r io.Reader, source string, span time.Duration, scale float64, loops int) (*ReplayPlan, error) {
	if span <= 0 || scale <= 0 || loops < 1 {
		return nil, fmt.Errorf("%w: %s: span %v, scale %g, loops %d: want positive", ErrReplay, source, span, scale, loops)
	}
	sr, err := mcap.NewStreamReader(r, mcap.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrReplay, source, err)
	}
	defer sr.Close()
	samples := map[uint16][]replaySample{}
	first := int64(-1)
	for {
		m, err := sr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrReplay, source, err)
		}
		at := m.PublishTime
		if at == 0 {
			at = m.LogTime
		}
		if m.LogTime > 1<<62 || at > 1<<62 {
			return nil, fmt.Errorf("%w: %s: message %d of channel %d: time %d ns out of range", ErrReplay, source, m.Sequence, m.ChannelID, max(m.LogTime, at))
		}
		s := replaySample{logNs: int64(m.LogTime), atNs: int64(at), size: len(m.Data)}
		if first < 0 || s.logNs < first {
			first = s.logNs
		}
		if len(samples[m.ChannelID]) >= 4*agentproto.MaxScheduleLen {
			return nil, fmt.Errorf("%w: %s: channel %d has more than %d messages: replay a file cut to the span", ErrReplay, source, m.ChannelID, 4*agentproto.MaxScheduleLen)
		}
		samples[m.ChannelID] = append(samples[m.ChannelID], s)
	}
	plan := &ReplayPlan{Source: source, Span: span, Scale: scale, Loops: loops}
	// t0 is the first publish time of the span over every channel: each
	// channel's offsets count from it, so the channels keep their phase.
	t0 := int64(-1)
	for id, ss := range samples {
		samples[id] = slices.DeleteFunc(ss, func(s replaySample) bool { return s.logNs-first >= int64(span) })
		for _, s := range samples[id] {
			if t0 < 0 || s.atNs < t0 {
				t0 = s.atNs
			}
		}
	}
	ids := make([]uint16, 0, len(samples))
	for id := range samples {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ss := samples[id]
		if len(ss) == 0 {
			continue
		}
		if len(ss) > agentproto.MaxScheduleLen {
			return nil, fmt.Errorf("%w: %s: channel %d has %d messages in %v, at most %d: replay a shorter span", ErrReplay, source, id, len(ss), span, agentproto.MaxScheduleLen)
		}
		slices.SortStableFunc(ss, func(a, b replaySample) int { return int(min(max(a.logNs-b.logNs, -1), 1)) })
		ch := ReplayChannel{Topic: fmt.Sprintf("channel %d", id)}
		if c, ok := sr.Channel(id); ok {
			ch.Topic = c.Topic
			if sc, ok := sr.Schema(c.SchemaID); ok {
				ch.Type = sc.Name
			}
		}
		prev := int64(0)
		for _, s := range ss {
			// Publish times out of log-time order keep the order
			// messages were logged in: a schedule never goes back.
			off := max(int64(float64(s.atNs-t0)/scale), prev)
			prev = off
			size := s.size
			if size < agentproto.PeerHeaderBytes {
				size = agentproto.PeerHeaderBytes
				ch.Padded++
			}
			ch.Plan.OffsetsNs = append(ch.Plan.OffsetsNs, off)
			ch.Plan.Sizes = append(ch.Plan.Sizes, size)
			ch.MaxSize = max(ch.MaxSize, size)
			ch.Bytes += int64(size)
		}
		ch.Plan.PeriodNs = max(int64(float64(span)/scale), prev+1)
		plan.Channels = append(plan.Channels, ch)
	}
	if len(plan.Channels) == 0 {
		return nil, fmt.Errorf("%w: %s: no messages in its first %v", ErrReplay, source, span)
	}
	return plan, nil
}

// SampleMix writes the sim rack's default recording to w: the sample
// robot mix (ros2mcap.WriteMix, seed 1) of length d, and says what it is.
func SampleMix(w io.Writer, d time.Duration) (string, error) {
	if _, err := ros2mcap.WriteMix(w, ros2mcap.MixOptions{Duration: d, Seed: 1}); err != nil {
		return "", fmt.Errorf("%w: sample mix: %w", ErrReplay, err)
	}
	return fmt.Sprintf("the sample robot mix (ros2mcap.WriteMix, seed 1, %v: /imu 200 Hz, /camera/image_raw 15 Hz, /lidar/points 10 Hz, /cmd_vel 20 Hz)", d), nil
}

// RateHz is the channel's mean rate over one pass, after scaling.
func (ch *ReplayChannel) RateHz() float64 {
	return float64(len(ch.Plan.Sizes)) / (float64(ch.Plan.PeriodNs) / 1e9)
}

// replayFlow is what flowCase adds to the case of one replayed channel.
type replayFlow struct {
	plan *ReplayPlan
	ch   *ReplayChannel
}

// notes are the replay's notes on the case; they also correct the
// throughput, which rig.FlowResult.Case counts at the largest size.
func (r *replayFlow) apply(c *report.Case) {
	p, ch := r.plan, r.ch
	if c.Sent > 0 && c.Duration > 0 {
		perMsg := float64(ch.Bytes) / float64(len(ch.Plan.Sizes))
		c.ThroughputMBps = float64(c.Delivered) * perMsg / c.Duration.Seconds() / 1e6
	}
	notes := []string{
		fmt.Sprintf("replay of %s, topic %s (%s): %d messages per pass, %d–%d B (%.0f B mean), mean %.1f Hz; the first %v of the recording at rate ×%g, %d pass(es)",
			p.Source, ch.Topic, orNone(ch.Type), len(ch.Plan.Sizes), slices.Min(ch.Plan.Sizes), ch.MaxSize, float64(ch.Bytes)/float64(len(ch.Plan.Sizes)), ch.RateHz(), p.Span, p.Scale, p.Loops),
		"each message sent at its recorded publish time (after the recording's first of the span) with its recorded size; payload bytes are the agent's pattern, not the recording's (the buses copy them without looking); the channels run as concurrent flows started one after another, so their phase is the recording's give or take the flows' start skew",
		"per-topic CPU and RSS are the agents' (every channel's endpoints share them): the mix case has the whole mix's CPU",
		"bounds: the rack profile's at the channel's largest payload",
	}
	if ch.Padded > 0 {
		notes = append(notes, fmt.Sprintf("%d message(s) under %d B padded to it (a peer's in-band header)", ch.Padded, agentproto.PeerHeaderBytes))
	}
	c.Add(report.Noted("steps.replay", notes...))
}

func orNone(s string) string {
	if s == "" {
		return "no schema"
	}
	return s
}

// ReplayRun is one middleware's replay of a plan: a case per channel and
// the mix's.
type ReplayRun struct {
	Topics []*report.Case
	Mix    *report.Case
}

// Replay carries plan over path: every channel a reliable flow (its
// subscriber on the path's receiving board), started one after another
// and run concurrently, each publisher sending the channel's plan
// (agentproto.Schedule). name prefixes the cases ("<name> /imu"). The
// mix case merges the channels' latencies and counts; its CPU is the
// agents' CPU over the mix, summed over boards (each board's agent
// counted once). On a PTP rack across kernels the topics' samples are
// gated per window as Measure gates them, and the mix merges what the
// gate kept. Blocks until every flow ended.
func Replay(ctx context.Context, env *Env, name string, path Path, plan *ReplayPlan) (*ReplayRun, error) {
	type started struct {
		p    Params
		f    *rig.Flow
		from string
		to   string
		ch   *ReplayChannel
	}
	var flows []started
	stopAll := func() {
		for _, s := range flows {
			_, _ = s.f.Wait(ctx)
		}
	}
	var gate *ptpGate
	if from, to, _, err := Route(env.Rack, path); err == nil && gated(env.Rack, from, to) {
		// As Measure: watch both boards' lock over every channel's life.
		if gate, err = startGate(ctx, env, from, to, env.Config.Window); err != nil {
			return nil, err
		}
		defer gate.close()
	}
	for i := range plan.Channels {
		ch := &plan.Channels[i]
		p := Params{Path: path, Payload: ch.MaxSize, RateHz: ch.RateHz(), Count: uint64(len(ch.Plan.Sizes)) * uint64(plan.Loops),
			schedule: &ch.Plan, replay: &replayFlow{plan: plan, ch: ch}}
		f, from, to, err := start(ctx, env, p)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("replay %s: topic %s: %w", name, ch.Topic, err)
		}
		flows = append(flows, started{p: p, f: f, from: from, to: to, ch: ch})
	}
	run := &ReplayRun{}
	mix := report.Results{Histogram: report.NewHistogram()}
	cpu := map[string]float64{} // board → its agent's CPU %, the longest-running endpoint's view
	dur := map[string]int64{}
	var failures []string
	type waited struct {
		res  *rig.FlowResult
		werr error
	}
	done := make([]waited, len(flows))
	var all [][]agentproto.Window
	for i, s := range flows {
		done[i].res, done[i].werr = s.f.Wait(ctx)
		if done[i].res != nil {
			all = append(all, done[i].res.Windows...)
		}
	}
	if gate != nil {
		gate.settle(ctx, all)
		gate.close() // judge on a finished series
	}
	for i, s := range flows {
		res, werr := done[i].res, done[i].werr
		r := &Ran{Result: res, Flow: s.f, From: s.from, To: s.to}
		if res == nil {
			failures = append(failures, fmt.Sprintf("%s: %v", s.ch.Topic, werr))
			continue
		}
		var g *gateOutcome
		if gate != nil {
			g = &gateOutcome{boards: []string{s.from, s.to}, judge: gate.mon}
			g.res, g.hist, g.err = gateWindows(res.Windows, res.Subscribers, gate.mon, s.from, s.to)
		}
		c := flowCase(env, name+" "+s.ch.Topic, s.p, r, g, werr)
		run.Topics = append(run.Topics, c)
		mix.Sent += c.Sent
		mix.Delivered += c.Delivered
		mix.Lost += c.Lost
		if c.Histogram != nil {
			mix.Histogram.Merge(c.Histogram)
		}
		mix.RSSBytes = max(mix.RSSBytes, c.RSSBytes)
		mix.Duration = max(mix.Duration, c.Duration)
		if c.Failure != "" {
			failures = append(failures, s.ch.Topic+": "+c.Failure)
		}
		ends := []struct {
			board string
			f     *agentproto.Final
		}{{s.from, res.Publisher}}
		for _, sub := range res.Subscribers {
			ends = append(ends, struct {
				board string
				f     *agentproto.Final
			}{s.to, sub})
		}
		for _, e := range ends {
			if e.f != nil && e.f.DurationNs > dur[e.board] {
				dur[e.board] = e.f.DurationNs
				cpu[e.board] = 100 * float64(e.f.CPUUserNs+e.f.CPUSysNs) / float64(e.f.DurationNs)
			}
		}
	}
	boards := make([]string, 0, len(cpu))
	for b, v := range cpu {
		mix.CPUPercent += v
		boards = append(boards, fmt.Sprintf("%s %.1f%%", b, v))
	}
	slices.Sort(boards)
	if len(failures) > 0 {
		mix.Failure = strings.Join(failures, "; ")
	}
	maxSize := 0
	var total int64
	var msgs int
	for _, ch := range plan.Channels {
		maxSize = max(maxSize, ch.MaxSize)
		total += ch.Bytes
		msgs += len(ch.Plan.Sizes)
	}
	var from, to string
	if len(flows) > 0 {
		from, to = flows[0].from, flows[0].to
	}
	spec := report.CaseSpec{Suite: env.Suite, Name: name + " mix", Transport: path.String(), PayloadBytes: int64(maxSize),
		Reliability: kind.Reliable, Subscribers: len(flows), Method: Method(env.Rack, from, to),
		Bounds: &report.Bounds{MaxLost: report.Loss(0)}}
	if b, _, ok := bounds(env, path, maxSize); ok && b.MaxCPUPercent > 0 {
		spec.Bounds.MaxCPUPercent = b.MaxCPUPercent
	}
	c := report.NewCase(routeOf(env, path, from, to), spec, mix)
	c.Middleware = path.MiddlewareName()
	if d := mix.Duration.Seconds(); d > 0 && mix.Sent > 0 {
		c.MsgsPerSec = float64(mix.Delivered) / d
		c.ThroughputMBps = float64(total) * float64(plan.Loops) * float64(mix.Delivered) / float64(mix.Sent) / d / 1e6
	}
	c.Add(report.Noted("steps.Replay",
		fmt.Sprintf("the whole mix of %s: %d channels, %d messages per pass (%.1f MB), the first %v of the recording at rate ×%g, %d pass(es), one reliable flow per channel side by side",
			plan.Source, len(plan.Channels), msgs, float64(total)/1e6, plan.Span, plan.Scale, plan.Loops),
		fmt.Sprintf("CPU: the agents' CPU time over the mix, percent of one core, summed over boards (%s): each board's agent runs every channel's endpoints there", strings.Join(boards, ", ")),
		"latency: every channel's samples merged; loss must be 0 (reliable); bounds: no loss, and the profile's CPU bound at the largest payload when it has one"))
	if gate != nil {
		c.Add(report.Noted("steps.Replay", "latency: the topics' samples as their cases' PTP gate kept them (windows not locked throughout excluded there)"))
	}
	run.Mix = finish(env, c)
	if len(run.Topics) == 0 {
		return run, fmt.Errorf("replay %s: no channel measured: %s", name, mix.Failure)
	}
	return run, nil
}

// ReplayPlanFor plans the replay ginkgo.config asks for (its replay
// block): the file it names, or the sample robot mix generated now (in
// memory, the length of the stretch replayed: nothing large is
// committed), the short form's duration on the sim rack and in CI.
// Blocks on the file.
func ReplayPlanFor(tc *harness.TestContext) (*ReplayPlan, error) {
	rc := tc.Config.Replay
	span := tc.Config.ReplayDuration(harness.ShortForm(tc.Rack.Name))
	if rc.File == "" {
		var buf bytes.Buffer
		what, err := SampleMix(&buf, span)
		if err != nil {
			return nil, err
		}
		return LoadReplay(&buf, what, span, rc.RateScale, rc.Loops)
	}
	path := tc.Config.RelPath(rc.File)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: replay.file: %w", ErrReplay, err)
	}
	defer f.Close()
	return LoadReplay(bufio.NewReaderSize(f, 1<<20), path, span, rc.RateScale, rc.Loops)
}

// ReplayJudged is Replay as MeasureJudged is Measure, for a host that
// other work shares (the sim rack, a CI runner): while the replay runs, a
// probe thread times the controller host's own wake-ups; when every
// failing case (topics and mix) fails only on tail bounds while the host
// was disturbed, the replay runs again, up to DisturbedAttempts in all,
// each case carrying the earlier attempts in its notes and the probe's
// figures in Extra. A peer's replay runs once: its cases are reported,
// not judged (AsPeerCase). Blocks for the replay(s).
func ReplayJudged(ctx context.Context, env *Env, name string, path Path, plan *ReplayPlan) (*ReplayRun, error) {
	if path.IsPeer() {
		return Replay(ctx, env, name, path, plan)
	}
	local := localFlow(env.Rack, path)
	var history []string
	for attempt := 1; ; attempt++ {
		var run *ReplayRun
		var err error
		host := hostProbed(ctx, local, func() { run, err = Replay(ctx, env, name, path, plan) })
		if err != nil || run == nil {
			return run, err
		}
		why, disturbed := replayExplained(run, host)
		if !disturbed || attempt == DisturbedAttempts {
			for i, c := range run.Topics {
				run.Topics[i] = judgedCase(env, c, host, history, attempt, disturbed, why)
			}
			run.Mix = judgedCase(env, run.Mix, host, history, attempt, disturbed, why)
			return run, nil
		}
		history = append(history, fmt.Sprintf("attempt %d: %s", attempt, why))
	}
}

// replayExplained reports whether at least one case of run failed and
// the disturbed host explains every failure (hostExplains).
func replayExplained(run *ReplayRun, host *report.Histogram) (string, bool) {
	var whys []string
	for _, c := range append(slices.Clone(run.Topics), run.Mix) {
		if c == nil || c.Verdict != report.Fail {
			continue
		}
		why, ok := hostExplains(c, host)
		if !ok {
			return "", false
		}
		whys = append(whys, c.Name+": "+why)
	}
	return strings.Join(whys, "; "), len(whys) > 0
}
