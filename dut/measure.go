package dut

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// MeasureOptions configures Measure. The zero value measures the rack's
// stimulus schedule.
type MeasureOptions struct {
	// Count overrides the dut's stimulus count (a short form); 0: the
	// rack's.
	Count int
	// ReadyTimeout bounds the readiness probes (a stimulus every probe
	// period until the first response). Default 15 s.
	ReadyTimeout time.Duration
	// Between, if set, is called after every timed stimulus with its
	// index (0-based), on the stimulus goroutine: a soak kills the
	// program here. It must return quickly.
	Between func(i int)
	// Usage, if set, reads the program's CPU time and resident set
	// (Program.Usage) at the start and the end of the timed phase; a
	// failed reading leaves the figures out and says why (UsageNote).
	Usage func() (cpu time.Duration, rssBytes int64, err error)
}

// Measurement is one run of stimuli and what came back, raw and
// correlated. Stamps are CLOCK_MONOTONIC of the controller, ns.
type Measurement struct {
	DUT *fixtures.DUT
	// Stimuli are the send stamps of the timed stimuli, in order.
	Stimuli []int64
	// Responses are the responses taken during the timed phase.
	Responses []Response
	// Overflow counts responses past the bounded buffer (not kept).
	Overflow int64
	// Tally is the correlation of Stimuli and Responses.
	Tally Tally
	// GroundTruth are the GPIO edge-to-edge delays (ns) of the stimuli
	// paired on the wire; nil without correlation.ground_truth.
	GroundTruth []int64
	// Probes is how many readiness probes went out before the first
	// response.
	Probes int
	// Start and End bound the timed phase (first stimulus, end of the
	// response window).
	Start, End int64
	// CPUPercent is the program's CPU time over the timed phase per wall
	// time (100 = one core; USER_HZ ticks, so ±1 tick over the run) and
	// RSSBytes its resident set at the end, when MeasureOptions.Usage
	// was given and read; else UsageNote says why not.
	CPUPercent float64
	RSSBytes   int64
	UsageNote  string

	pl Placement // where it ran (the case names the DDS domain)
}

// probeSeq numbers readiness probes (echo) apart from timed stimuli, so
// a late probe answer is never mistaken for one.
const probeSeq = 1 << 62

// Measure sends the dut's stimuli to its correlation input at its rate
// and takes the responses on its correlation output, from this process
// (the controller) in pl's domain and on pl's chips. It first probes
// until the program answers (ErrNotReady after opts.ReadyTimeout), then
// sends the timed stimuli, waits one deadline for the last answers and
// correlates. ROS 2 ports go through the bridge Start runs beside the
// program (ros2.go): the stimulus's header stamp is its send stamp, and
// echo reads it back from the answer's header. Ports on another bus
// (raw Cyclone DDS, Fast DDS, iceoryx) are refused with an error matching
// errors.ErrUnsupported naming the port. Blocks for the whole run; ctx
// cancels it.
func Measure(ctx context.Context, d *fixtures.DUT, pl Placement, opts MeasureOptions) (*Measurement, error) {
	n := d.Stimulus.Count
	if opts.Count > 0 {
		n = opts.Count
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 15 * time.Second
	}
	c := d.Correlation
	in, ok := d.Port(c.Input)
	if !ok {
		return nil, fmt.Errorf("dut %s: no input %q", d.Name, c.Input)
	}
	out, ok := d.Port(c.Output)
	if !ok {
		return nil, fmt.Errorf("dut %s: no output %q", d.Name, c.Output)
	}
	for _, p := range []fixtures.DUTPort{in, out} {
		if mw := p.Middleware.OrDefault(); !p.IsGPIO() && mw != fixtures.PortHilrig && mw != fixtures.PortROS2 {
			return nil, fmt.Errorf("%w: dut %s port %s: %s topics are not driven by the dut runner yet (hilrig and ROS 2 topics and GPIO lines are)", errors.ErrUnsupported, d.Name, p.Name, mw)
		}
	}
	offset := 0
	if c.Offset != nil {
		offset = *c.Offset
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var node *middleware.Node
	if !in.IsGPIO() || !out.IsGPIO() {
		var err error
		node, err = middleware.OpenNode("hilrig-dut-"+d.Name, &middleware.NodeOptions{Domain: pl.Domain})
		if err != nil {
			return nil, fmt.Errorf("dut %s: open node: %w", d.Name, err)
		}
		defer node.Close()
	}
	// The responses: bounded (a program that floods answers is counted,
	// not buffered without end): one per stimulus and a quarter more for
	// duplicates and strays; 16 B each, 25 MB at the rack's 10^6 cap.
	col := &collector{max: n + n/4 + 1024, echo: c.Mode == fixtures.CorrelateEcho, offset: offset, stamp: isROS2(out)}
	col.buf = make([]Response, 0, col.max)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred later, runs first)
	defer cancel()
	if out.IsGPIO() {
		w, err := gpio.Watch(runCtx, pl.lineSpec(*out.GPIO))
		if err != nil {
			return nil, fmt.Errorf("dut %s output %s: %w", d.Name, out.Name, err)
		}
		// The software figure: when the rig took the edge, not the edge's
		// own stamp (that is the ground truth's).
		readEdges(runCtx, &wg, w, func(*gpio.Edge) { col.add(monoclock.Now(), nil) })
	} else {
		sub, err := node.NewSubscriber(contract(d, out), nil)
		if err != nil {
			return nil, fmt.Errorf("dut %s output %s: %w", d.Name, out.Name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = sub.Receive(runCtx, func(m *middleware.Message) error {
				col.add(m.RecvMono, m.Payload)
				return nil
			})
		}()
	}
	var gt *edgeLog
	if c.GroundTruth != "" {
		gtPort, _ := d.Port(c.GroundTruth)
		var err error
		if gt, err = watchEdges(runCtx, &wg, pl.lineSpec(*in.GPIO), pl.lineSpec(*gtPort.GPIO), 2*n+1024); err != nil {
			return nil, fmt.Errorf("dut %s ground truth: %w", d.Name, err)
		}
	}
	send, closeIn, err := stimulusSender(runCtx, node, pl, d, in, offset)
	if err != nil {
		return nil, fmt.Errorf("dut %s input %s: %w", d.Name, in.Name, err)
	}
	defer closeIn()

	m := &Measurement{DUT: d, Stimuli: make([]int64, 0, n), pl: pl}
	// Readiness: probe until any response, then let late probe answers
	// drain for one deadline and forget them.
	probeEvery := max(d.Stimulus.Period(), 10*time.Millisecond)
	readyBy := time.Now().Add(opts.ReadyTimeout)
	for col.count() == 0 {
		if time.Now().After(readyBy) {
			return nil, fmt.Errorf("%w: dut %s: no response on %s to %d probes on %s in %s", ErrNotReady, d.Name, out.Name, m.Probes, in.Name, opts.ReadyTimeout)
		}
		m.Probes++
		if _, err := send(probeSeq + uint64(m.Probes)); err != nil {
			return nil, fmt.Errorf("dut %s probe: %w", d.Name, err)
		}
		if err := pause(ctx, probeEvery); err != nil {
			return nil, err
		}
	}
	if err := pause(ctx, c.Deadline+probeEvery); err != nil {
		return nil, err
	}
	col.reset()
	if gt != nil {
		gt.reset()
	}

	var cpu0 time.Duration
	var usageErr error
	if opts.Usage != nil {
		cpu0, _, usageErr = opts.Usage()
	}
	period := d.Stimulus.Period()
	start := time.Now()
	for i := range n {
		if err := pauseUntil(ctx, start.Add(time.Duration(i)*period)); err != nil {
			return nil, err
		}
		stamp, err := send(uint64(i + 1))
		if err != nil {
			return nil, fmt.Errorf("dut %s stimulus %d: %w", d.Name, i+1, err)
		}
		m.Stimuli = append(m.Stimuli, stamp)
		if opts.Between != nil {
			opts.Between(i)
		}
	}
	// The response window: the last stimulus's deadline, plus a period
	// so an answer in time but still in flight is taken.
	if err := pause(ctx, c.Deadline+period); err != nil {
		return nil, err
	}
	m.Start, m.End = m.Stimuli[0], monoclock.Now()
	switch {
	case opts.Usage == nil:
		m.UsageNote = "the program's CPU and memory are not read (external, or not asked for)"
	case usageErr != nil:
		m.UsageNote = "the program's CPU and memory: " + usageErr.Error()
	default:
		cpu1, rss, err := opts.Usage()
		if err != nil {
			m.UsageNote = "the program's CPU and memory: " + err.Error()
			break
		}
		m.CPUPercent = 100 * float64(cpu1-cpu0) / float64(time.Since(start))
		m.RSSBytes = rss
	}
	cancel()
	wg.Wait()
	m.Responses, m.Overflow = col.take()
	if col.stamp && col.echo {
		m.Responses = stampsToSeq(m.Stimuli, m.Responses)
	}
	m.Tally = Correlate(c.Mode, m.Stimuli, m.Responses, c.Deadline)
	if gt != nil {
		stim, resp := gt.take()
		m.GroundTruth = PairEdges(stim, resp)
	}
	return m, nil
}

func (pl Placement) lineSpec(l fixtures.Line) gpio.LineSpec {
	return gpio.LineSpec{Chip: pl.chip(l.Chip), Line: l.Ref(), ActiveLow: l.ActiveLow, Consumer: "hilrig-dut"}
}

// TopicDepth is the keep-last depth of every dut topic (best effort):
// deep enough that an answer burst after a stall is not overwritten
// before the rig takes it. The program gets it as HILRIG_<PORT>_DEPTH.
const TopicDepth = 16

// contract is the middleware contract of a topic port, the one the
// program is told in its environment (Env); of a ROS 2 port, the hilrig
// topic the bridge pairs with it.
func contract(d *fixtures.DUT, p fixtures.DUTPort) middleware.Contract {
	t := p.Topic
	if isROS2(p) {
		t = ros2HilrigTopic(d, p)
	}
	return middleware.Contract{Topic: t, MaxPayload: p.PayloadOrDefault(), Depth: TopicDepth}
}

// stimulusSender returns the function that sends one stimulus numbered
// seq and returns its stamp (CLOCK_MONOTONIC just before the hand-over),
// and the function that releases the input. A ROS 2 input sends its
// type's template with that stamp as its header stamp (seq is not sent:
// the stamp is the echo).
func stimulusSender(ctx context.Context, node *middleware.Node, pl Placement, d *fixtures.DUT, in fixtures.DUTPort, offset int) (func(seq uint64) (int64, error), func(), error) {
	if in.IsGPIO() {
		o, err := gpio.Open(ctx, pl.lineSpec(*in.GPIO), gpio.Mode{})
		if err != nil {
			return nil, nil, err
		}
		// One edge per stimulus (toggle): the program reacts to both.
		return func(uint64) (int64, error) {
			t := monoclock.Now()
			return t, o.Mark()
		}, func() { _ = o.Close() }, nil
	}
	pub, err := node.NewPublisher(contract(d, in), nil)
	if err != nil {
		return nil, nil, err
	}
	if isROS2(in) {
		msg, err := ros2Template(in)
		if err != nil {
			_ = pub.Close()
			return nil, nil, err
		}
		return func(uint64) (int64, error) {
			t := monoclock.Now()
			_ = rostopic.PutStamp(msg, t) // the template holds a header: never fails
			return t, pub.Send(msg)
		}, func() { _ = pub.Close() }, nil
	}
	buf := make([]byte, in.PayloadOrDefault())
	return func(seq uint64) (int64, error) {
		if offset+8 <= len(buf) {
			binary.LittleEndian.PutUint64(buf[offset:], seq)
		}
		t := monoclock.Now()
		return t, pub.Send(buf)
	}, func() { _ = pub.Close() }, nil
}

// collector keeps the responses, bounded. Safe for concurrent use; add
// does not allocate (the buffer is sized up front).
type collector struct {
	mu       sync.Mutex
	buf      []Response
	max      int
	overflow int64
	// seen counts every response, probes' answers included (readiness).
	seen   int64
	echo   bool
	offset int
	// stamp: the response is a ROS 2 message whose header stamp is the
	// echo; Seq holds it (ns) until stampsToSeq numbers it.
	stamp bool
}

func (c *collector) add(mono int64, payload []byte) {
	r := Response{Mono: mono}
	switch {
	case c.echo && c.stamp:
		// No stamp (short, or nanosec out of range): an unknown response.
		if ns, ok := rostopic.Stamp(payload); ok && ns > 0 {
			r.Seq = uint64(ns)
		}
	case c.echo:
		// A short payload carries no sequence number: an unknown response.
		if c.offset+8 <= len(payload) {
			r.Seq = binary.LittleEndian.Uint64(payload[c.offset:])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if r.Seq >= probeSeq {
		return // a probe's answer: readiness, not a sample
	}
	if len(c.buf) == c.max {
		c.overflow++
		return
	}
	c.buf = append(c.buf, r)
}

// count is how many responses came, probes' answers included.
func (c *collector) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

func (c *collector) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf, c.overflow = c.buf[:0], 0
}

func (c *collector) take() ([]Response, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.overflow
}

// edgeLog keeps the edge stamps of a stimulus line and a response line
// (the lines' own stamps: the ground truth). Bounded.
type edgeLog struct {
	mu         sync.Mutex
	stim, resp []int64
	max        int
}

func (l *edgeLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stim, l.resp = l.stim[:0], l.resp[:0]
}

func (l *edgeLog) take() (stim, resp []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stim, l.resp
}

// watchEdges watches the stimulus and response lines (a passive probe on
// the sim chip) until ctx ends.
func watchEdges(ctx context.Context, wg *sync.WaitGroup, stim, resp gpio.LineSpec, max int) (*edgeLog, error) {
	l := &edgeLog{max: max}
	for _, s := range []struct {
		spec gpio.LineSpec
		dst  *[]int64
	}{{stim, &l.stim}, {resp, &l.resp}} {
		w, err := gpio.Watch(ctx, s.spec)
		if err != nil {
			return nil, err
		}
		readEdges(ctx, wg, w, func(e *gpio.Edge) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(*s.dst) < l.max {
				*s.dst = append(*s.dst, e.TimestampNs)
			}
		})
	}
	return l, nil
}

// readEdges calls fn with every edge w reads, on a goroutine of wg,
// until ctx ends or the watch fails, then closes w. An overflow is not
// the end: the edges before it are lost, the ones after it are read.
func readEdges(ctx context.Context, wg *sync.WaitGroup, w *gpio.Watcher, fn func(*gpio.Edge)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Close()
		var e gpio.Edge
		for {
			err := w.ReadEdge(ctx, &e)
			if ctx.Err() != nil || err != nil && !errors.Is(err, gpio.ErrOverflow) {
				return
			}
			fn(&e)
		}
	}()
}

// pause waits d or until ctx ends: the stimulus schedule, not a
// synchronisation.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func pauseUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	return pause(ctx, d)
}
