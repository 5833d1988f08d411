package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// defaultLinger is how long a publisher that has sent its count stays open
// (serving late reads and UDP NACKs) before closing, unless stopped first.
const defaultLinger = 3 * time.Second

// endpoint is one running publisher or subscriber.
type endpoint struct {
	a     *agent
	id    string
	s     agentproto.Start
	ctx   context.Context
	stop  context.CancelCauseFunc
	start time.Time
	// period is the publisher's or pinger's send period (ratePeriod);
	// 0 means as fast as possible.
	period time.Duration
	// ownThread: run locked the goroutine to its thread (CPU or Priority
	// set), so pacing sleeps on that thread (sleepUntil).
	ownThread bool

	// mu guards the window fields; the hot loop holds it for a few
	// counter updates and one histogram record per message.
	mu       sync.Mutex
	win      *report.Histogram
	winSent  uint64
	winRecv  uint64
	winLost  uint64
	total    *report.Histogram // owned by the window goroutine until the loop ends
	spare    *report.Histogram
	windowIx uint64
	winStart time.Time
	usage    sys.Usage
	usage0   sys.Usage // at start, for the final's CPU time

	// totals, written by the hot loop only.
	sent, recv, lost, lastSeq, timeouts, marks uint64
	firstNs, lastNs                            int64
	lastRecvMono                               atomic.Int64
	// discoveryNs is a peer writer's wait for its first reader.
	discoveryNs int64

	tr   *tracer          // kernel trace (trace.go); nil unless Start.Trace
	ctrs endpointCounters // process counters at start (trace.go)
	stg  *stageRec        // shm stage stamps (stages.go); nil unless Start.Stages

	// stamps and spareStamps (Start.Stamps): the window's message stamps,
	// filled by the hot loop under mu up to their capacity, swapped at
	// each window; stampsDropped counts those past it.
	stamps, spareStamps []agentproto.MessageStamp
	stampsDropped       uint64
}

func newEndpoint(a *agent, s agentproto.Start) *endpoint {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &endpoint{a: a, id: s.Endpoint, s: s, ctx: ctx, stop: cancel}
}

func (e *endpoint) cancel(cause error) { e.stop(cause) }

func (e *endpoint) send(m *agentproto.Msg) {
	if err := e.a.enc.Encode(m); err != nil {
		e.a.opts.Logger.Warn("cannot report", "endpoint", e.id, "kind", m.Kind, "err", err)
	}
}

func (e *endpoint) fail(code agentproto.Code, err error) {
	e.send(agentproto.NewError(code, e.id, err))
}

func stampClock(s string) middleware.ClockID {
	switch s {
	case "tai":
		return middleware.ClockTAI
	case "monotonic":
		return middleware.ClockMonotonic
	}
	return middleware.ClockRealtime
}

// run sets the endpoint up, acknowledges it, runs it and reports its
// final. Every resource it takes is released before it returns.
func (e *endpoint) run(parent context.Context) {
	defer e.stop(nil)
	s := e.s
	if s.DurationNs > 0 {
		var cancel context.CancelFunc
		e.ctx, cancel = context.WithTimeoutCause(e.ctx, time.Duration(s.DurationNs), errDuration)
		defer cancel()
	}
	if s.Role == agentproto.Load { // load.go: threads, no node
		e.runLoad()
		return
	}
	period, err := ratePeriod(s.RateHz)
	if err != nil {
		e.fail(agentproto.CodeInvalid, err)
		return
	}
	e.period = period
	// The endpoint's goroutine is the hot loop; pin it when asked.
	var tids []int // the locked thread, whose context switches are the endpoint's
	if s.CPU != nil || s.Priority > 0 {
		// Never unlocked: run is the last thing its goroutine does
		// (agent.handle), so a thread pinned and made SCHED_FIFO here (or
		// by the pinger, echo.go, or a peer's receive, peer.go) exits with
		// it. Unlocked, it went back to the runtime's pool as it was and
		// ran any goroutine — window flushes, trace snapshots, GC — at
		// real-time priority on the measured CPU in every later case.
		runtime.LockOSThread()
		e.ownThread = true
		tids = []int{sys.Gettid()}
		if s.CPU != nil && s.Role == agentproto.Publisher {
			if err := sys.PinThread(*s.CPU); err != nil {
				e.fail(agentproto.CodeStart, err)
				return
			}
		}
		if s.Priority > 0 && s.Role == agentproto.Publisher {
			if err := sys.SetFIFO(s.Priority); err != nil {
				e.fail(agentproto.CodeStart, err)
				return
			}
		}
	}
	mw := s.Middleware
	if mw == "" {
		mw = agentproto.MiddlewareHilrig
	}
	var (
		peer Peer
		node *middleware.Node
	)
	var coldPeer bool
	if agentproto.IsPeer(mw) {
		if err := awaitPeerLink(e.ctx, s.PeerNet); err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("board %q: peer %s: %w", e.a.opts.Board, mw, err))
			return
		}
		var err error
		if s.ColdPeer {
			peer, coldPeer, err = e.a.coldPeer(mw, s.PeerNet)
		} else {
			peer, err = e.a.peer(mw, s.PeerNet)
		}
		if err != nil {
			e.fail(agentproto.CodeStart, err)
			return
		}
		if coldPeer {
			// Deferred first, so it runs last: after the endpoint's
			// writer or reader closed.
			defer func() {
				if err := peer.Close(); err != nil {
					e.a.opts.Logger.Warn("closing the endpoint's own peer participant", "endpoint", e.id, "peer", mw, "err", err)
				}
			}()
		}
	} else {
		nodeName := s.Node
		if nodeName == "" {
			nodeName = s.Endpoint
		}
		var err error
		node, err = middleware.OpenNode(nodeName, &middleware.NodeOptions{
			Domain: s.Domain, ShmDir: e.a.opts.ShmDir, StampClock: stampClock(s.Stamp), Logger: e.a.opts.Logger,
			HugePages: s.HugePages,
		})
		if err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("open node: %w", err))
			return
		}
		defer node.Close()
	}
	ends := endpoints{node: node, peer: peer, s: &e.s}
	if s.Stages && node != nil && (s.Role == agentproto.Publisher || s.Role == agentproto.Subscriber) {
		e.stg = newStageRec(s.Role, s.WarmUp, s.Count)
		ends.stages = e.stg
	}
	var mk Marker
	if s.Marker != nil {
		var err error
		mk, err = e.a.opts.OpenMarker(parent, *s.Marker)
		if err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("marker %s/%s: %w", s.Marker.Chip, s.Marker.Line, err))
			return
		}
		defer mk.Close()
	}
	e.win, e.total, e.spare = report.NewHistogram(), report.NewHistogram(), report.NewHistogram()
	if n := s.Stamps; n > 0 {
		e.stamps, e.spareStamps = make([]agentproto.MessageStamp, 0, n), make([]agentproto.MessageStamp, 0, n)
	}
	if s.Trace != nil && (s.Role == agentproto.Publisher || s.Role == agentproto.Subscriber) {
		if e.tr, err = armTracer(*s.Trace); err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("trace: %w", err))
			return
		}
		defer e.tr.close()
	}
	var loop func() error
	switch s.Role {
	case agentproto.Publisher:
		pub, err := ends.out(s.Contract, s.Send)
		if err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("publisher on %q: %w", s.Contract.Topic, err))
			return
		}
		defer pub.close()
		if err := e.awaitReader(pub, nil); err != nil {
			e.fail(agentproto.CodeStart, err)
			return
		}
		loop = func() error { return e.publish(pub, mk) }
	case agentproto.Subscriber:
		sub, err := ends.in(s.Contract)
		if err != nil {
			e.fail(agentproto.CodeStart, fmt.Errorf("subscriber on %q: %w", s.Contract.Topic, err))
			return
		}
		defer sub.close()
		loop = func() error { return e.subscribe(sub, mk) }
	case agentproto.Pinger, agentproto.Echo: // echo.go
		l, closeRT, err := e.openRoundTrip(ends, mk)
		if err != nil {
			e.fail(agentproto.CodeStart, err)
			return
		}
		defer closeRT()
		loop = l
	}
	// One collection now, so the live-heap reading in every window
	// (hostinfo.GoHeapLive, refreshed only by a GC) already holds this
	// endpoint's own state — three histograms of ~210 KiB, buffers. With
	// allocation-free hot paths the next GC may come only late in a short
	// run, and the set-up then reads as growth (10 subscribers: 6.3 →
	// 11.7 MiB). Before the started ack, so this endpoint's messages never
	// pay for it; endpoints already running in the agent see its two
	// stop-the-world pauses (tens of µs), at start-up only. An endpoint
	// whose windows carry histograms makes their encoder (1.2 MB, one per
	// process) first: made by the first window, after this baseline, it
	// read as 1.2–2.4 MB of growth and failed the fanout suite's 1 MiB
	// bound.
	if e.recordsLatency() {
		report.WarmEncoder()
	}
	runtime.GC()
	e.start = time.Now()
	e.winStart = e.start
	e.usage = sys.ProcessUsage()
	e.usage0 = e.usage
	e.ctrs = startCounters(tids)
	started := &agentproto.Started{Endpoint: e.id, Middleware: mw}
	if peer != nil {
		started.Peer, started.DiscoveryNs, started.Cold = peer.Describe(), e.discoveryNs, coldPeer
		if f, ok := peer.(PeerShmFiles); ok {
			// After the writer or reader opened: its participant's and
			// its ports' segments exist by now.
			files, err := f.ShmFiles()
			if err != nil {
				e.a.opts.Logger.Warn("listing the peer's shared-memory files for clean-up after a kill", "endpoint", e.id, "peer", mw, "err", err)
			}
			started.PeerShm = files
		}
	}
	e.send(&agentproto.Msg{Kind: agentproto.KindStarted, Started: started})

	windowsDone := make(chan struct{})
	stopWindows := make(chan struct{})
	go e.windows(stopWindows, windowsDone)
	if e.tr != nil {
		go e.tr.watch(&e.mu, stopWindows)
		defer func() { <-e.tr.done }()
	}
	loopErr := loop()
	close(stopWindows)
	<-windowsDone
	e.flushWindow(time.Now()) // the last, partial window

	fin := e.final(loopErr)
	if s.Role == agentproto.Publisher && fin.Reason == agentproto.EndCount {
		// Report now, keep the publisher open for late readers and NACKs.
		e.send(&agentproto.Msg{Kind: agentproto.KindFinal, Final: fin})
		t := time.NewTimer(defaultLinger)
		select {
		case <-e.ctx.Done():
		case <-t.C:
		}
		t.Stop()
		return
	}
	e.send(&agentproto.Msg{Kind: agentproto.KindFinal, Final: fin})
}

func (e *endpoint) final(loopErr error) *agentproto.Final {
	s := e.s
	u := sys.ProcessUsage()
	f := &agentproto.Final{
		Endpoint: e.id, Role: s.Role, Sent: e.sent, Received: e.recv, Lost: e.lost, Timeouts: e.timeouts,
		LastSeq: e.lastSeq, Marks: e.marks, MaxRSSBytes: u.MaxRSSBytes,
		CPUUserNs: u.UserNs - e.usage0.UserNs, CPUSysNs: u.SysNs - e.usage0.SysNs,
	}
	if e.recordsLatency() {
		f.Latency = e.total
	}
	f.Counters = e.ctrs.finish(e.id, e.a.opts.ShmDir, e.s.HugePages)
	if e.tr != nil {
		f.Trace = e.tr.best
	}
	if e.stg != nil {
		f.Stages = e.stg.stamps()
	}
	if s.Role == agentproto.Subscriber {
		// Messages after the last one received never arrived: a gap the
		// sequence numbers cannot show.
		if s.Count > 0 && e.lastSeq < s.Count {
			f.Lost += s.Count - e.lastSeq
		}
	}
	if e.lastNs > e.firstNs {
		f.DurationNs = e.lastNs - e.firstNs
	} else {
		f.DurationNs = time.Since(e.start).Nanoseconds()
	}
	cause := context.Cause(e.ctx)
	switch {
	case loopErr == nil || errors.Is(loopErr, errCount):
		f.Reason = agentproto.EndCount
	case errors.Is(cause, errDuration):
		f.Reason = agentproto.EndDuration
	case errors.Is(cause, errIdle):
		f.Reason = agentproto.EndIdle
	case errors.Is(cause, errStopped), errors.Is(cause, errShutdown):
		f.Reason = agentproto.EndStopped
	default:
		f.Reason, f.Error = agentproto.EndError, loopErr.Error()
	}
	return f
}

// windows sends a window summary every period until stop is closed.
func (e *endpoint) windows(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	period := time.Duration(e.s.WindowNs)
	if period == 0 {
		period = time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			e.flushWindow(now)
			if idle := e.s.IdleTimeoutNs; idle > 0 && e.s.Role == agentproto.Subscriber {
				if last := e.lastRecvMono.Load(); last != 0 && sys.Now(sys.ClockMonotonic)-last > idle {
					e.cancel(errIdle)
				}
			}
		}
	}
}

// flushWindow swaps the window histogram out under the lock, folds it into
// the total and reports it.
func (e *endpoint) flushWindow(now time.Time) {
	e.mu.Lock()
	h := e.win
	e.win = e.spare
	sent, recv, lost := e.winSent, e.winRecv, e.winLost
	e.winSent, e.winRecv, e.winLost = 0, 0, 0
	stamps, dropped := e.stamps, e.stampsDropped
	e.stamps, e.stampsDropped = e.spareStamps, 0
	var wLat, wRecv int64
	var wSeq uint64
	var wCPU, wTID int
	if e.tr != nil {
		wLat, wRecv, wSeq, wCPU, wTID = e.tr.takeWorst()
	}
	e.mu.Unlock()
	u := sys.ProcessUsage()
	w := &agentproto.Window{
		Endpoint: e.id, Index: e.windowIx, StartNs: e.winStart.UnixNano(), EndNs: now.UnixNano(),
		Sent: sent, Received: recv, Lost: lost, RSSBytes: hostinfo.ProcessRSS(), HeapLiveBytes: hostinfo.GoHeapLive(), HeapAllocBytes: hostinfo.GoHeapAllocs(),
		CPUUserNs: u.UserNs - e.usage.UserNs, CPUSysNs: u.SysNs - e.usage.SysNs,
	}
	if e.recordsLatency() {
		w.Latency = h
	}
	if cap(stamps) > 0 {
		w.Stamps, w.StampsDropped, w.MonoEndNs = stamps, dropped, monoclock.Now()-time.Since(now).Nanoseconds()
	}
	if e.tr != nil {
		snap, err := e.tr.window(e.windowIx, h, wLat, wRecv, wSeq, wCPU, wTID)
		if err != nil {
			e.a.opts.Logger.Warn("trace snapshot", "endpoint", e.id, "err", err)
		}
		w.Trace = snap
	}
	e.send(&agentproto.Msg{Kind: agentproto.KindWindow, Window: w})
	e.spareStamps = stamps[:0] // encoded: reuse next window
	e.total.Merge(h)
	h.Reset()
	e.spare = h
	e.windowIx++
	e.winStart = now
	e.usage = u
}

// publish sends Count messages (or until the context ends) at RateHz.
func (e *endpoint) publish(pub outlet, mk Marker) error {
	s := e.s
	payload := make([]byte, s.Payload)
	if s.Schedule != nil { // a replayed plan: sizes up to the contract's
		payload = make([]byte, s.Contract.MaxPayload)
	}
	for i := range payload {
		payload[i] = byte(i)
	}
	period := e.period
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	begin := time.Now()
	e.firstNs = begin.UnixNano()
	n := len(payload)
	for i := uint64(0); s.Count == 0 || i < s.Count; i++ {
		if e.ctx.Err() != nil {
			return context.Cause(e.ctx)
		}
		switch {
		case s.Schedule != nil:
			var at time.Duration
			at, n = s.Schedule.At(i)
			if err := sleepUntil(e.ctx, timer, begin.Add(at), e.ownThread); err != nil {
				return err
			}
		case period > 0:
			if err := sleepUntil(e.ctx, timer, begin.Add(time.Duration(i)*period), e.ownThread); err != nil {
				return err
			}
		}
		if mk != nil {
			if err := mk.Mark(); err != nil {
				return fmt.Errorf("marker: %w", err)
			}
			e.marks++
		}
		if e.tr != nil {
			e.tr.markSend(i + 1)
		}
		if _, err := e.tally(pub.send(payload[:n], i+1), "send message", i+1); err != nil {
			return err
		}
	}
	e.lastNs = time.Now().UnixNano()
	return nil
}

// ratePeriod is the send period for a rate of hz messages per second, 0
// for hz 0 (as fast as possible). Decode refuses rates outside
// agentproto's range, but the agent does not rely on it: a Start built
// in-process skips Decode, and 1 s / 1e-12 Hz = 10^21 ns does not fit a
// time.Duration — the conversion gave a negative period, so the endpoint
// ran flat out while labelled 1e-12 Hz. Within the range the period is
// 100 ns..1000 s and the conversion is exact enough.
func ratePeriod(hz float64) (time.Duration, error) {
	if !agentproto.ValidRate(hz) {
		return 0, fmt.Errorf("start.rate_hz %v: want 0 (as fast as possible) or %g..%g Hz", hz, agentproto.MinRateHz, agentproto.MaxRateHz)
	}
	if hz == 0 {
		return 0, nil
	}
	return time.Duration(float64(time.Second) / hz), nil
}

// sleepUntil paces a sender until t: a sleep for the bulk, a short spin
// for the last 50 µs (timer slack would otherwise smear the rate). Returns
// ctx's cause if it ends first.
//
// A sender on a thread of its own (locked: pinned or SCHED_FIFO) sleeps
// in clock_nanosleep on that thread, in slices of at most ownSleepSlice so
// ctx is seen. A runtime timer wakes a goroutine only when some runtime
// thread gets to run it, and a runtime thread on a CPU taken by a
// real-time task waits for that task: on the 2-vCPU VM, an unpinned
// goroutine that StartHog had just returned to resumed only as a 20 ms
// SCHED_FIFO hog on the other CPU ended (it read the hog as 0.1–3 ms
// long in 2 runs of 10). A pinned publisher paced that way did not send during a
// spike on the receiver's CPU, and sent after it with fresh stamps, so the
// spike delayed no message: with the timer, the first 5 ms hog of
// TestTraceOnBreachNamesHog broke no bound in 6 runs of 24; sleeping on
// its own thread, in 1 of 24. Each such run hid a spike from the latency
// it should have shown, a coordinated omission made by the rig itself.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time, ownThread bool) error {
	const spin = 50 * time.Microsecond
	if d := time.Until(t); d > spin {
		if ownThread {
			if err := sleepOnThread(ctx, monoclock.Now()+int64(d-spin)); err != nil {
				return err
			}
		} else {
			timer.Reset(d - spin)
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-timer.C:
			}
		}
	}
	for time.Now().Before(t) {
	}
	return nil
}

// ownSleepSlice bounds one clock_nanosleep of sleepOnThread, so a
// cancelled ctx ends a long period's sleep within it.
const ownSleepSlice = 10 * time.Millisecond

// sleepOnThread sleeps the calling (locked) thread until CLOCK_MONOTONIC
// reaches deadline (ns), checking ctx every ownSleepSlice. Off Linux it
// falls back to time.Sleep slices.
func sleepOnThread(ctx context.Context, deadline int64) error {
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		now := monoclock.Now()
		if now >= deadline {
			return nil
		}
		until := min(deadline, now+int64(ownSleepSlice))
		if err := sys.SleepUntilMono(until); err != nil {
			time.Sleep(time.Duration(until - now))
		}
	}
}

// sendNumbered publishes one message of len(payload) bytes whose first 8
// bytes carry n (little-endian): written in place into a loaned slot on
// the loan path, into payload and copied on the copy path. No allocation.
func sendNumbered(pub *middleware.Publisher, path agentproto.SendPath, payload []byte, n uint64) error {
	if path == agentproto.SendLoan {
		l, err := pub.Loan()
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(l.Bytes(), n)
		return l.Publish(len(payload))
	}
	binary.LittleEndian.PutUint64(payload, n)
	return pub.Send(payload)
}

// awaitReader waits for a peer writer's first matched reader and, for a
// pinger, its reply reader's first matched writer (discovery), and notes
// how long it took; hilrig's endpoints need no wait.
func (e *endpoint) awaitReader(o outlet, reply inlet) error {
	var w PeerWriter
	switch po := o.(type) {
	case *peerOut:
		w = po.w
	case *rosOut:
		w = po.w
	default:
		return nil
	}
	begin := time.Now()
	ends := []any{w}
	if pi, ok := reply.(*peerIn); ok {
		ends = append(ends, pi.r)
	}
	for _, x := range ends {
		d, err := awaitMatch(e.ctx, x)
		if err != nil {
			return fmt.Errorf("%s: waiting for discovery: %w", e.s.Middleware, err)
		}
		if d < 0 {
			e.a.opts.Logger.Warn("peer endpoint matched nothing; starting anyway", "endpoint", e.id, "middleware", e.s.Middleware, "waited", peerMatchWait)
		}
	}
	e.discoveryNs = time.Since(begin).Nanoseconds()
	if _, ok := o.(*rosOut); ok {
		return rosSettle(e.ctx, time.Duration(e.discoveryNs))
	}
	return nil
}

// rosSettle lets a ROS 2 reader match the writer that just matched it.
// The two sides of a DDS match complete independently, and under ROS 2's
// volatile profiles a reader drops what a writer sent before the reader
// matched it (Fast DDS: 19 of the first 300 messages at 2 kHz in
// TestROS2Endpoints without this). The writer cannot see the reader's
// side, and the message carries no sequence number to tell the loss from
// a late join, so the publisher waits as long again as its own match
// took, at least 50 ms and at most 1 s (a ROS 2 node waiting for its
// subscription count does the same). Blocks; honours ctx.
func rosSettle(ctx context.Context, matched time.Duration) error {
	d := min(max(matched, 50*time.Millisecond), time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// countSent counts one message sent, in the run and in the open window.
// tally counts the outcome err of sending message n: sent, it is
// counted sent; a send timeout is counted and skipped (sent false, no
// error); any other error ends the endpoint, named what n. No
// allocation unless it returns an error.
func (e *endpoint) tally(err error, what string, n uint64) (sent bool, _ error) {
	switch {
	case err == nil:
		e.countSent()
		return true, nil
	case errors.Is(err, middleware.ErrTimeout):
		e.timeouts++
		return false, nil
	default:
		return false, fmt.Errorf("%s %d: %w", what, n, err)
	}
}

func (e *endpoint) countSent() {
	e.sent++
	e.mu.Lock()
	e.winSent++
	e.mu.Unlock()
}

// onMessage is the subscriber's hot path: latency, counters, marker.
// 0 allocs (TestOnMessageAllocs).
func (e *endpoint) onMessage(m *middleware.Message, mk Marker, clockLatency bool, clockID int32) error {
	var lat int64
	if clockLatency {
		lat = sys.Now(clockID) - m.Header.SendClock
	} else {
		lat = m.RecvMono - m.Header.SendMono
	}
	if mk != nil {
		if err := mk.Mark(); err != nil {
			return err
		}
		e.marks++
	}
	seq := m.Header.Seq
	if e.stg != nil {
		e.stg.delivered(seq, m.Header.SendMono)
	}
	e.mu.Lock()
	if seq > e.s.WarmUp {
		e.win.Record(lat)
		if e.tr != nil {
			e.tr.observe(seq, lat, m.RecvMono)
		}
	}
	if cap(e.stamps) > 0 {
		if len(e.stamps) < cap(e.stamps) {
			e.stamps = append(e.stamps, agentproto.MessageStamp{Seq: seq, RecvMono: m.RecvMono, LatencyNs: lat})
		} else {
			e.stampsDropped++
		}
	}
	e.winRecv++
	e.winLost += m.Lost
	e.mu.Unlock()
	e.recv++
	e.lost += m.Lost
	if seq > e.lastSeq {
		e.lastSeq = seq
	}
	if e.firstNs == 0 {
		e.firstNs = m.RecvMono
	}
	e.lastNs = m.RecvMono
	e.lastRecvMono.Store(m.RecvMono)
	if e.s.Count > 0 && seq >= e.s.Count {
		return errCount
	}
	return nil
}

// subscribe receives until count, duration, idle timeout or stop.
func (e *endpoint) subscribe(sub inlet, mk Marker) error {
	s := e.s
	clockLatency := s.Latency == agentproto.LatencyStamp
	clockID := int32(sys.ClockRealtime)
	switch s.Stamp {
	case "tai":
		clockID = sys.ClockTAI
	case "monotonic":
		clockID = sys.ClockMonotonic
	}
	var markErr error
	err := sub.receive(e.ctx, func(m *middleware.Message) error {
		err := e.onMessage(m, mk, clockLatency, clockID)
		if err != nil && !errors.Is(err, errCount) {
			markErr = err
		}
		return err
	})
	if markErr != nil {
		return fmt.Errorf("marker: %w", markErr)
	}
	if errors.Is(err, errCount) {
		return nil
	}
	if e.ctx.Err() != nil {
		return context.Cause(e.ctx)
	}
	return err
}
