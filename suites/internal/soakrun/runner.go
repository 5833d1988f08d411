package soakrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// PTPSource gives a board's clock state over a window (nil: that board
// reports no PTP). Implemented over timesync.Monitor by MonitorPTP.
type PTPSource interface {
	Sample(agent string, from, to time.Time) *soak.PTPSample
}

// Restarter restarts the endpoint of a track (churn): it stops it, waits
// for its last windows (returned as leftovers, to be counted in the
// current window) and starts an identical endpoint. at is when the new
// endpoint was acknowledged (a subscriber is attached, a publisher about
// to send). Blocks.
type Restarter interface {
	Restart(ctx context.Context, t *Track) (fresh *Track, leftovers []agentproto.Window, at time.Time, err error)
}

// Finisher ends the traffic at the end of the soak: publishers first,
// then subscribers once they drained. It returns the windows that arrived
// while it waited (the last partial ones). Blocks.
type Finisher interface {
	Finish(ctx context.Context) (map[*Track][]agentproto.Window, error)
}

// Recoverer brings a lost board back during a soak.
type Recoverer interface {
	// PowerControl returns nil when board can be power-cycled, else an
	// error saying why not (no power: block).
	PowerControl(board string) error
	// Recover power-cycles board, waits for it, redeploys its agent and
	// restarts every endpoint of tracks that ran on it; it returns the
	// tracks with those replaced, in the same order (the others
	// unchanged). Blocks, bounded by ctx.
	Recover(ctx context.Context, board string, tracks []*Track) ([]*Track, error)
}

// LiveSink receives the soak while it runs: the live metrics endpoint
// (report/live.Metrics). Called on the runner goroutine; implementations
// must not block.
type LiveSink interface {
	// SoakWindow is called with every window appended to the checkpoint.
	SoakWindow(w *soak.Window)
	// SoakProgress is called at every drain, so progress and ETA move
	// between checkpoint windows.
	SoakProgress(elapsed, planned time.Duration)
	// SoakVerdict is called with every window appended to the checkpoint,
	// after SoakWindow, with the soak's verdict so far (Runner.Bounds
	// judged by a soak.Running over the windows so far).
	SoakVerdict(checks []soak.RunningCheck)
}

// Runner runs one soak. Fill the exported fields, then call Run once.
// Status may be called from any goroutine (Ginkgo progress reports).
type Runner struct {
	// Window is the checkpoint period; Progress the progress-line period.
	Window, Progress time.Duration
	// Drain is how often the tracks' windows are taken and folded into the
	// open soak window (default [DefaultDrain] of Window). Between two
	// drains every endpoint buffers its agent windows in the controller,
	// each with a decoded latency histogram (~100–200 KiB): draining only
	// at the checkpoint made the controller hold one checkpoint period of
	// them per subscriber (hundreds of MiB in an accelerated soak).
	Drain time.Duration
	// Until is when the traffic stops (the soak's planned end).
	Until time.Time
	// Name prefixes progress lines ("soak smoke").
	Name string
	// Checkpoint receives every closed window (fsynced per window).
	Checkpoint *soak.Checkpointer
	// Out receives a progress line every Progress (nil: none).
	Out io.Writer
	PTP PTPSource
	// Churn restarts an endpoint every Churn (0: never) through Restarter,
	// alternating subscribers and publishers of the flows in turn.
	Churn     time.Duration
	Restarter Restarter
	Finisher  Finisher
	// OnWindow, if set, is called after each window was appended (tests
	// and the controller-kill helper use it to say "window N is durable").
	OnWindow func(w *soak.Window)
	// Heartbeat, if set, is how long a board may go without sending an
	// agent window (every endpoint sends one per agent window, traffic or
	// not) before it counts as lost. A lost board is recovered through
	// Recoverer (see Recoveries); without one, without power control for
	// the board, or past the budget, the soak stops at once: the open
	// window is appended with an agent-error event, and Run returns an
	// error matching ErrBoardLost naming the board and the cause, rather
	// than running to its end counting losses.
	Heartbeat time.Duration
	// ConsoleTail, if set, returns a board's recent console lines for the
	// event and the error (nil: no console capture).
	ConsoleTail func(board string) string
	// ConsolePanic, if set, returns the first panic or oops line a board's
	// console showed after since ("" for none). Such a board is lost at
	// once, as if it had missed its heartbeats.
	ConsolePanic func(board string, since time.Time) string
	// Recoverer, if set, brings a lost board back: power cycle, wait,
	// agent redeployed, its flows resumed. The window the outage falls in
	// is closed as a fault window ([soak.Window.Fault]: counted, its
	// latency and losses left out of the verdicts, with the console tail).
	Recoverer Recoverer
	// Recoveries is the recovery budget of the soak: past it a lost board
	// fails the soak (ErrBoardLost, "recovery budget exhausted").
	Recoveries int
	// Faults, if set, reports faults recovered outside the runner (a dut
	// program's crash-restart: DUTFeed); each closes the window it is
	// taken in as a fault window (soak.Window.Fault).
	Faults FaultSource
	// HeapProfile, if set, is a file the controller's heap profile is
	// rewritten to at every checkpoint window, just before the windows
	// are drained (for finding what holds the controller's memory).
	HeapProfile string
	// Controller, if set, adds this process (the controller) as an agent
	// of that name to every window, with its RSS and CPU, so the memory
	// verdict covers the controller as well as the boards.
	Controller string
	// Live, if set, is fed every closed window, the progress and the
	// verdict so far (nil: no live metrics).
	Live LiveSink
	// Bounds are the soak's bounds, which the verdict so far fed to Live
	// is judged against (soak.Running: the bounds a window can break for
	// good; the zero value requires zero loss only, as soak.Judge).
	Bounds soak.Bounds
	// Prior holds the windows closed before a resume (the resumed
	// checkpoint's), counted into the verdict so far before the new ones.
	Prior []soak.Window

	mu       sync.Mutex
	stopOnce sync.Once
	stopCh   chan struct{}
	lastCPU  time.Duration
	status   Status
	started  time.Time
	pending  []pendingRestart
	churnSeq int
	// lastSeen is when each board last sent an agent window (runner
	// goroutine only).
	lastSeen map[string]time.Time
	// panicSince is, per board, from when a console panic counts (the
	// soak's start or the board's last recovery).
	panicSince map[string]time.Time
	// fault is the outage of the open window (nil: none).
	fault *soak.Fault
	// running judges the windows so far for Live (runner goroutine only).
	running *soak.Running
}

// Status is the runner's progress, for the progress line and reports.
type Status struct {
	Elapsed, Remaining time.Duration
	// ETA is the wall-clock time of the planned end (zero before Run).
	ETA       time.Time
	Windows   int
	LastIndex int
	// P99 is the largest per-stream p99 of the last window (0: none).
	P99                           time.Duration
	Sent, Delivered, Lost         int64
	MaxRSS                        int64
	MaxRSSAgent                   string
	PTPOffset                     time.Duration
	PTPKnown, PTPLocked           bool
	Restarts, Recovered, Unlocked int
	// BoardRecoveries counts lost boards brought back (fault windows).
	BoardRecoveries int
	// Crashes counts the faults taken from Runner.Faults (a dut program
	// crashed and restarted).
	Crashes int
}

type pendingRestart struct {
	agent, target, flow string
	sub                 *Track // for subscriber restarts: the new track
	at                  time.Time
}

func (r *Runner) stopped() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopCh == nil {
		r.stopCh = make(chan struct{})
	}
	return r.stopCh
}

// Stop ends the soak early, as if Until had come: the traffic is
// finished and the open window appended. Safe for concurrent use;
// does not block.
func (r *Runner) Stop() { r.stopOnce.Do(func() { close(r.stopped()) }) }

// Status returns the progress so far. Safe for concurrent use.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	if !r.started.IsZero() {
		s.Elapsed = time.Since(r.started).Round(time.Second)
		s.Remaining = max(time.Until(r.Until), 0).Round(time.Second)
		s.ETA = r.Until
	}
	return s
}

// String is the progress line.
func (s Status) String() string {
	var b strings.Builder
	pct := 0.0
	if total := s.Elapsed + s.Remaining; total > 0 {
		pct = 100 * float64(s.Elapsed) / float64(total)
	}
	eta := "?"
	if !s.ETA.IsZero() {
		eta = s.ETA.UTC().Format("2006-01-02 15:04:05Z")
	}
	fmt.Fprintf(&b, "elapsed %v (%.1f%%), remaining %v (ETA %s), windows %d, p99 %s, lost %d of %d sent (%d delivered), RSS %s",
		s.Elapsed, pct, s.Remaining, eta, s.Windows, report.FormatNs(int64(s.P99)), s.Lost, s.Sent, s.Delivered, fmtBytes(s.MaxRSS))
	if s.MaxRSSAgent != "" {
		fmt.Fprintf(&b, " (%s)", s.MaxRSSAgent)
	}
	if s.PTPKnown {
		state := "locked"
		if !s.PTPLocked {
			state = "NOT locked"
		}
		fmt.Fprintf(&b, ", PTP offset %s %s (%d unlocked windows)", report.FormatNs(int64(s.PTPOffset)), state, s.Unlocked)
	} else {
		b.WriteString(", PTP n/a")
	}
	if s.Restarts > 0 {
		fmt.Fprintf(&b, ", restarts %d (%d recovered)", s.Restarts, s.Recovered)
	}
	if s.BoardRecoveries > 0 {
		fmt.Fprintf(&b, ", board outages recovered %d", s.BoardRecoveries)
	}
	if s.Crashes > 0 {
		fmt.Fprintf(&b, ", crashes restarted %d", s.Crashes)
	}
	return b.String()
}

// ProgressReport is for ginkgo.AttachProgressReporter.
func (r *Runner) ProgressReport() string {
	return r.Name + ": " + r.Status().String()
}

// Run feeds windows from tracks into the checkpoint until Until, then
// finishes the traffic and appends the last window. It returns the first
// error that stops the soak; every window closed before it is on disk.
// Blocks; ctx cancels (the open window is then lost, as with a crash).
func (r *Runner) Run(ctx context.Context, tracks []*Track) error {
	if r.Window <= 0 || r.Checkpoint == nil {
		return fmt.Errorf("%w: runner needs a window and a checkpoint", ErrPlan)
	}
	agg := newAggregator()
	gated := map[subKey]bool{}
	for _, t := range tracks {
		agg.agent(t.Agent)
		if t.Role == agentproto.Subscriber && t.PTPGated {
			gated[subKey{t.Agent, t.Flow}] = true
		}
	}
	r.running = soak.NewRunning(r.Bounds)
	for i := range r.Prior {
		r.running.Add(&r.Prior[i])
	}
	now := time.Now()
	r.mu.Lock()
	r.started = now
	r.mu.Unlock()
	r.lastSeen = map[string]time.Time{}
	r.panicSince = map[string]time.Time{}
	for _, t := range tracks {
		r.lastSeen[t.Agent] = now
		r.panicSince[t.Agent] = now
	}
	winStart := now
	nextWin := now.Add(r.Window)
	nextProgress := now.Add(r.Progress)
	nextChurn := time.Time{}
	if r.Churn > 0 && r.Restarter != nil {
		nextChurn = now.Add(r.Churn)
	}
	timer := time.NewTimer(time.Until(nextWin))
	defer timer.Stop()
	drain := time.NewTicker(DefaultDrain(r.Window, r.Drain))
	defer drain.Stop()
	stop := r.stopped()
	// drainAndRecover folds what every track holds and, if a board went
	// silent, recovers it; it reports whether it did.
	drainAndRecover := func() (bool, error) {
		for _, t := range tracks {
			r.fold(agg, t, t.Src.Take())
		}
		board, cause := r.lostBoard(tracks)
		if board == "" {
			return false, nil
		}
		var err error
		if tracks, err = r.recoverBoard(ctx, agg, tracks, gated, winStart, board, cause); err != nil {
			return false, err
		}
		// The fault window closed at the recovery: the next one starts
		// now, a full window long.
		winStart = time.Now()
		nextWin = winStart.Add(r.Window)
		timer.Reset(time.Until(nextWin))
		return true, nil
	}
	for {
		final := !nextWin.Before(r.Until)
		if final {
			timer.Reset(time.Until(r.Until))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			final = true
		case <-drain.C:
			if r.Live != nil {
				r.Live.SoakProgress(time.Since(now), r.Until.Sub(now))
			}
			if _, err := drainAndRecover(); err != nil {
				return err
			}
			continue
		case <-timer.C:
		}
		if r.HeapProfile != "" {
			// Before the drain: what the controller holds between drains
			// (buffered agent windows) is what the profile is for.
			if err := writeHeapProfile(r.HeapProfile); err != nil {
				return err
			}
		}
		if recovered, err := drainAndRecover(); err != nil {
			return err
		} else if recovered {
			continue
		}
		if !nextChurn.IsZero() && !time.Now().Before(nextChurn) && !final {
			var err error
			tracks, err = r.churn(ctx, agg, tracks)
			if err != nil {
				return err
			}
			nextChurn = nextChurn.Add(r.Churn)
		}
		if final {
			if r.Finisher != nil {
				left, err := r.Finisher.Finish(ctx)
				for _, t := range tracks {
					r.fold(agg, t, left[t])
					r.fold(agg, t, t.Src.Take())
				}
				if err != nil {
					// Keep what was measured: append the window, then fail.
					_ = r.closeWindow(agg, tracks, gated, winStart, time.Now(), true)
					return fmt.Errorf("%w: finishing the traffic: %w", ErrFeed, err)
				}
			}
			return r.closeWindow(agg, tracks, gated, winStart, time.Now(), true)
		}
		end := time.Now()
		if err := r.closeWindow(agg, tracks, gated, winStart, end, false); err != nil {
			return err
		}
		winStart = end
		nextWin = nextWin.Add(r.Window)
		if r.Out != nil && !end.Before(nextProgress) {
			fmt.Fprintf(r.Out, "%s %s: %s\n", end.UTC().Format("15:04:05"), r.Name, r.Status())
			nextProgress = nextProgress.Add(r.Progress)
		}
		timer.Reset(time.Until(nextWin))
	}
}

// DefaultDrain is the drain period a runner uses: drain if set, else a
// quarter of the checkpoint window, at most 1 s and at least 10 ms.
func DefaultDrain(window, drain time.Duration) time.Duration {
	if drain > 0 {
		return drain
	}
	return min(max(window/4, 10*time.Millisecond), time.Second)
}

// lostBoard returns the first board that sent no agent window for
// Heartbeat, or whose console showed a panic or oops, with the cause ("",
// "" for none).
func (r *Runner) lostBoard(tracks []*Track) (board, cause string) {
	now := time.Now()
	for _, t := range tracks {
		if r.ConsolePanic != nil {
			if l := r.ConsolePanic(t.Agent, r.panicSince[t.Agent]); l != "" {
				return t.Agent, "board " + t.Agent + " console: " + l
			}
		}
		if r.Heartbeat <= 0 {
			continue
		}
		last := r.lastSeen[t.Agent]
		if now.Sub(last) < r.Heartbeat {
			continue
		}
		return t.Agent, fmt.Sprintf("board %s sent no agent window for %v (heartbeat budget %v; last at %s)",
			t.Agent, now.Sub(last).Round(time.Millisecond), r.Heartbeat, last.UTC().Format(time.RFC3339Nano))
	}
	return "", ""
}

// recoverBoard handles a lost board: it recovers it through Recoverer
// and closes the open window [winStart, recovered) as a fault window,
// or, with no power control for it or past the budget, appends the open
// window with the event and returns an ErrBoardLost error naming the
// board and the cause. It returns the tracks with the board's replaced.
func (r *Runner) recoverBoard(ctx context.Context, agg *aggregator, tracks []*Track, gated map[subKey]bool, winStart time.Time,
	board, cause string) ([]*Track, error) {
	now := time.Now()
	tail := ""
	if r.ConsoleTail != nil {
		tail = r.ConsoleTail(board)
	}
	withTail := func(s string) string {
		if tail != "" {
			s += "\nconsole:\n" + tail
		}
		return s
	}
	r.mu.Lock()
	done := r.status.BoardRecoveries
	r.mu.Unlock()
	var why string
	var perr error
	if r.Recoverer != nil {
		perr = r.Recoverer.PowerControl(board)
	}
	switch {
	case r.Recoverer == nil:
		why = "no power control: the soak stops"
	case perr != nil:
		why = fmt.Sprintf("no power control (%v): the soak stops", perr)
	case done >= r.Recoveries:
		why = fmt.Sprintf("recovery budget exhausted (%d of %d used): the soak stops", done, r.Recoveries)
	}
	if why != "" {
		detail := withTail(cause + "; " + why)
		agg.event(board, soak.Event{Time: now, Kind: soak.EventAgentError, Target: "board " + board, Detail: detail})
		_ = r.closeWindow(agg, tracks, gated, winStart, now, true)
		return tracks, fmt.Errorf("%w: %s", ErrBoardLost, detail)
	}
	recovery := fmt.Sprintf("power-cycled (recovery %d of %d)", done+1, r.Recoveries)
	// What the board's endpoints sent before they died counts in this
	// window; the replaced tracks' sources are drained once more after.
	for _, t := range tracks {
		r.fold(agg, t, t.Src.Take())
	}
	fresh, err := r.Recoverer.Recover(ctx, board, tracks)
	if err != nil {
		detail := withTail(fmt.Sprintf("%s; %s failed: %v", cause, recovery, err))
		agg.event(board, soak.Event{Time: now, Kind: soak.EventAgentError, Target: "board " + board, Detail: detail})
		_ = r.closeWindow(agg, tracks, gated, winStart, time.Now(), true)
		return tracks, fmt.Errorf("%w: %s", ErrBoardLost, detail)
	}
	replaced := map[*Track]bool{}
	for i, t := range tracks {
		if i < len(fresh) && fresh[i] != t {
			replaced[t] = true
			r.fold(agg, t, t.Src.Take())
		}
	}
	// Churn restarts of replaced subscribers can no longer be resolved:
	// the outage, not the churn, ended them.
	r.mu.Lock()
	kept := r.pending[:0]
	for _, p := range r.pending {
		if (p.sub == nil || !replaced[p.sub]) && p.agent != board {
			kept = append(kept, p)
		}
	}
	r.pending = kept
	r.status.BoardRecoveries++
	r.mu.Unlock()
	end := time.Now()
	for _, t := range fresh {
		r.lastSeen[t.Agent] = end
	}
	r.panicSince[board] = end
	agg.event(board, soak.Event{Time: now, Kind: soak.EventAgentError, Target: "board " + board,
		Detail: fmt.Sprintf("%s; %s, back after %v", cause, recovery, end.Sub(now).Round(time.Millisecond))})
	r.fault = &soak.Fault{Board: board, Cause: cause, From: now, To: end, Recovery: recovery, Console: tail}
	if err := r.closeWindow(agg, fresh, gated, winStart, end, false); err != nil {
		return fresh, err
	}
	return fresh, nil
}

// fold adds a track's windows and resolves pending restart recoveries.
func (r *Runner) fold(agg *aggregator, t *Track, ws []agentproto.Window) {
	if len(ws) > 0 && r.lastSeen != nil {
		r.lastSeen[t.Agent] = time.Now()
	}
	for _, w := range ws {
		agg.add(t, w)
		if t.Role != agentproto.Subscriber || w.Received == 0 {
			continue
		}
		r.mu.Lock()
		kept := r.pending[:0]
		for _, p := range r.pending {
			hit := p.flow == t.Flow && (p.sub == t || p.sub == nil && w.StartNs >= p.at.UnixNano())
			if !hit {
				kept = append(kept, p)
				continue
			}
			// The first delivery lies within this agent window; its end is
			// an upper bound (resolution: the agent window period).
			rec := max(time.Duration(w.EndNs-p.at.UnixNano()), 0)
			agg.event(p.agent, soak.Event{Time: p.at, Kind: soak.EventRestart, Target: p.target, Recovered: true,
				RecoveryNs: int64(rec), Detail: "recovery is an upper bound (agent window resolution)"})
			r.status.Recovered++
		}
		r.pending = kept
		r.mu.Unlock()
	}
}

// churn restarts the next endpoint in turn.
func (r *Runner) churn(ctx context.Context, agg *aggregator, tracks []*Track) ([]*Track, error) {
	// Order: sub of flow 0, pub of flow 0, sub of flow 1, ...
	var order []int
	for i, t := range tracks {
		if t.Role == agentproto.Subscriber {
			order = append(order, i)
			for j, u := range tracks {
				if u.Role == agentproto.Publisher && u.Flow == t.Flow {
					order = append(order, j)
				}
			}
		}
	}
	if len(order) == 0 {
		return tracks, nil
	}
	i := order[r.churnSeq%len(order)]
	r.churnSeq++
	old := tracks[i]
	fresh, left, at, err := r.Restarter.Restart(ctx, old)
	r.fold(agg, old, left)
	if err != nil {
		return tracks, fmt.Errorf("%w: restart %s %s on %s: %w", ErrFeed, old.Role, old.Flow, old.Agent, err)
	}
	out := append([]*Track(nil), tracks...)
	out[i] = fresh
	p := pendingRestart{agent: old.Agent, target: string(old.Role) + " " + old.Flow, flow: old.Flow, at: at}
	if old.Role == agentproto.Subscriber {
		p.sub = fresh
	}
	r.mu.Lock()
	r.pending = append(r.pending, p)
	r.status.Restarts++
	r.mu.Unlock()
	return out, nil
}

func (r *Runner) closeWindow(agg *aggregator, tracks []*Track, gated map[subKey]bool, start, end time.Time, final bool) error {
	for _, t := range tracks {
		if t.Role == agentproto.Subscriber {
			agg.stream(t) // every stream appears in every window
		}
	}
	if final {
		r.mu.Lock()
		for _, p := range r.pending {
			agg.event(p.agent, soak.Event{Time: p.at, Kind: soak.EventRestart, Target: p.target, Recovered: false,
				Detail: "no delivery after the restart before the soak ended"})
		}
		r.pending = nil
		r.mu.Unlock()
	}
	r.takeFaults()
	var ptp func(string) *soak.PTPSample
	if r.PTP != nil {
		ptp = func(a string) *soak.PTPSample { return r.PTP.Sample(a, start, end) }
	}
	sent, del, lost := agg.totSent, agg.totDelivered, agg.totLost
	w := agg.close(start, end, ptp, gated)
	w.Fault, r.fault = r.fault, nil
	if r.Controller != "" {
		cpu := processCPU()
		aw := soak.AgentWindow{Agent: r.Controller, RSSBytes: hostinfo.ProcessRSS()}
		if span := end.Sub(start); span > 0 && r.lastCPU > 0 {
			aw.CPUPercent = 100 * float64(cpu-r.lastCPU) / float64(span)
		}
		r.lastCPU = cpu
		w.Agents = append(w.Agents, aw)
	}
	if err := r.Checkpoint.Append(&w); err != nil {
		return fmt.Errorf("%w: window [%s, %s): %w", ErrCheckpoint, start.Format(time.RFC3339), end.Format(time.RFC3339), err)
	}
	r.mu.Lock()
	st := &r.status
	st.Windows++
	st.LastIndex = w.Index
	st.Sent, st.Delivered, st.Lost = sent, del, lost
	st.P99, st.MaxRSS, st.MaxRSSAgent = 0, 0, ""
	st.PTPKnown, st.PTPLocked, st.PTPOffset = false, true, 0
	for _, a := range w.Agents {
		for _, s := range a.Streams {
			st.P99 = max(st.P99, time.Duration(s.Summary.P99))
		}
		if a.RSSBytes > st.MaxRSS {
			st.MaxRSS, st.MaxRSSAgent = a.RSSBytes, a.Agent
		}
		if a.PTP != nil {
			st.PTPKnown = true
			st.PTPLocked = st.PTPLocked && a.PTP.Locked
			if o := time.Duration(abs64(a.PTP.MaxAbsOffsetNs)); o > st.PTPOffset {
				st.PTPOffset = o
			}
		}
	}
	if !w.Locked() {
		st.Unlocked++
	}
	r.mu.Unlock()
	if r.Live != nil {
		r.Live.SoakWindow(&w)
		r.mu.Lock()
		elapsed, planned := end.Sub(r.started), r.Until.Sub(r.started)
		r.mu.Unlock()
		r.Live.SoakProgress(elapsed, planned)
		// At every window, not only at the end: a lab watching a 72-hour
		// soak sees it fail when a window breaks a bound, not days later.
		r.running.Add(&w)
		r.Live.SoakVerdict(r.running.Checks())
	}
	if r.OnWindow != nil {
		r.OnWindow(&w)
	}
	return nil
}

// takeFaults makes the open window a fault window for every fault
// Runner.Faults reports: the first fault is the window's, later ones in
// the same window extend it (cause, end and console appended).
func (r *Runner) takeFaults() {
	if r.Faults == nil {
		return
	}
	fs := r.Faults.TakeFaults()
	for _, f := range fs {
		if r.fault == nil {
			r.fault = &f
			continue
		}
		r.fault.Cause += "; " + f.Cause
		r.fault.Recovery += "; " + f.Recovery
		r.fault.To = f.To
		if f.Console != "" {
			r.fault.Console += "\n" + f.Console
		}
	}
	r.mu.Lock()
	r.status.Crashes += len(fs)
	r.mu.Unlock()
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func fmtBytes(n int64) string { return bytesize.Approx(n, " ") }

// writeHeapProfile replaces path with the current heap profile.
func writeHeapProfile(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("%w: heap profile: %w", ErrCheckpoint, err)
	}
	runtime.GC() // inuse figures as of now, not of the last GC cycle
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("%w: heap profile %s: %w", ErrCheckpoint, path, err)
	}
	return nil
}
