package timesync

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is one poll of one board, as recorded for the report.
type Sample struct {
	// At is when the poll completed (CLOCK_REALTIME + monotonic reading).
	At        time.Time     `json:"at"`
	State     PortState     `json:"state"`
	Offset    time.Duration `json:"offset_ns"`
	PathDelay time.Duration `json:"path_delay_ns"`
	GM        ClockIdentity `json:"gm"`
	// Ingress is the last Sync ingress time (ns, on the timestamping clock).
	Ingress      int64         `json:"ingress_ns"`
	HasPHC       bool          `json:"has_phc,omitempty"`
	PHCSysOffset time.Duration `json:"phc_sys_offset_ns,omitempty"`
	PHCSysDelay  time.Duration `json:"phc_sys_delay_ns,omitempty"`
	Locked       bool          `json:"locked"`
	Cond         Condition     `json:"condition"`
	// Detail says why the sample is not locked, with the values (the
	// verdict's Detail); "" when locked or when Err says it.
	Detail string `json:"detail,omitempty"`
	// Err is the read error, if any.
	Err string `json:"err,omitempty"`
}

// clockError is this sample's contribution to the clock uncertainty: the
// measured offset from the master plus, with a PHC, the PHC↔system offset
// and its read window (phc2sys's residual error).
func (s Sample) clockError() time.Duration {
	e := abs(s.Offset)
	if s.HasPHC {
		e += abs(s.PHCSysOffset) + s.PHCSysDelay
	}
	return e
}

// EventKind is what happened to a board's lock.
type EventKind uint8

const (
	// EventLocked: the board became locked (first time, or recovered after
	// a loss; see Event.Recovered).
	EventLocked EventKind = iota + 1
	// EventLockLost: a locked board's sample failed a check.
	EventLockLost
	// EventGMChanged: the board follows a different grandmaster than at
	// the previous SLAVE sample.
	EventGMChanged
)

// String returns "locked", "lock-lost" or "gm-changed".
func (k EventKind) String() string {
	switch k {
	case EventLocked:
		return "locked"
	case EventLockLost:
		return "lock-lost"
	case EventGMChanged:
		return "gm-changed"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is a lock transition or a grandmaster change.
type Event struct {
	// At is when the sample that showed it was read.
	At    time.Time `json:"at"`
	Board string    `json:"board"`
	Kind  EventKind `json:"kind"`
	// Recovered is true for an EventLocked after an EventLockLost.
	Recovered bool `json:"recovered,omitempty"`
	// Verdict of the sample (for lock-lost: which check failed and why).
	Verdict Verdict `json:"verdict"`
	// PrevGM and GM for EventGMChanged.
	PrevGM ClockIdentity `json:"prev_gm,omitempty"`
	GM     ClockIdentity `json:"gm,omitempty"`
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Period between polls of each board (0 → DefaultPeriod).
	Period time.Duration
	// Bound is the largest acceptable |offset from master|; 0 means
	// [DefaultBound] by each sample's timestamping mode.
	Bound time.Duration
	// EventBuffer is the capacity of the Events channel (0 → 64). When the
	// channel is full, events are still kept in EventLog and counted by
	// DroppedEvents.
	EventBuffer int
	// MaxEvents caps EventLog (0 → 100000).
	MaxEvents int
	// MaxSamples caps each board's recorded series (0 → unbounded; a
	// 72-hour soak at 1.25 s is ~207k samples, ~25 MiB per board). Past
	// the cap samples are counted, not stored; the lock state is still
	// tracked and events still raised.
	MaxSamples int
	// OnEvent, if set, is called for every event from the board's polling
	// goroutine: hand off and return, and don't call Stop from it.
	OnEvent func(Event)
	// Logger (nil: none).
	Logger *slog.Logger
}

// Monitor polls every board's status at a period during a run, records
// the series, raises loss-of-lock and GM-change events and answers
// window queries. Safe for concurrent use. Start it once; Stop waits for
// its goroutines.
type Monitor struct {
	cfg    MonitorConfig
	boards []Board
	events chan Event
	drop   atomic.Uint64

	mu      sync.Mutex
	series  map[string]*boardState
	evlog   []Event
	evOver  uint64
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type boardState struct {
	tr       *Tracker
	samples  []Sample
	overflow uint64
	locked   bool
	lost     bool
	lastGM   ClockIdentity
	last     Verdict
}

// NewMonitor validates the configuration. It does not poll until Start.
func NewMonitor(boards []Board, cfg MonitorConfig) (*Monitor, error) {
	if err := validateBoards(boards); err != nil {
		return nil, err
	}
	if cfg.Bound < 0 {
		return nil, fmt.Errorf("%w: MonitorConfig.Bound %v must be ≥ 0 (0: by timestamping mode)", ErrBadConfig, cfg.Bound)
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 64
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 100000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{cfg: cfg, boards: append([]Board(nil), boards...), events: make(chan Event, cfg.EventBuffer), series: map[string]*boardState{}}
	for _, b := range boards {
		m.series[b.Name] = &boardState{tr: NewTracker(b.ExpectedGM, cfg.Bound, &b.Policy)}
	}
	return m, nil
}

// Start begins polling, one goroutine per board, until ctx ends or Stop.
// It returns at once.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("%w: Monitor already started", ErrBadConfig)
	}
	m.started = true
	ctx, m.cancel = context.WithCancel(ctx)
	for _, b := range m.boards {
		m.wg.Add(1)
		go m.poll(ctx, b)
	}
	return nil
}

// Stop ends polling and waits for the goroutines. Idempotent. The series
// and event log stay readable; the Events channel is not closed (a reader
// should select on its own done signal).
func (m *Monitor) Stop() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
}

// Events delivers events as they happen (bounded; see EventBuffer).
func (m *Monitor) Events() <-chan Event { return m.events }

// DroppedEvents counts events that did not fit the Events channel (they
// are still in EventLog).
func (m *Monitor) DroppedEvents() uint64 { return m.drop.Load() }

// EventLogOverflow counts events not kept in EventLog because it reached
// MaxEvents (they were still delivered to Events and OnEvent).
func (m *Monitor) EventLogOverflow() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.evOver
}

// EventLog returns a copy of every event so far, in order.
func (m *Monitor) EventLog() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.evlog...)
}

// Series returns a copy of the board's recorded samples, oldest first.
func (m *Monitor) Series(board string) ([]Sample, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs, ok := m.series[board]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownBoard, board)
	}
	return append([]Sample(nil), bs.samples...), nil
}

// Locked reports the board's current lock state and the last verdict.
func (m *Monitor) Locked(board string) (bool, Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs, ok := m.series[board]
	if !ok {
		return false, Verdict{}, fmt.Errorf("%w %q", ErrUnknownBoard, board)
	}
	return bs.locked, bs.last, nil
}

// RequireLocked waits for n consecutive locked samples on every board of
// the Monitor, with its own trackers (see the package-level
// [RequireLocked], whose default period it uses). Blocks.
func (m *Monitor) RequireLocked(ctx context.Context, bound time.Duration, n int) error {
	return RequireLocked(ctx, m.boards, bound, n, &RequireOptions{Logger: m.cfg.Logger})
}

func (m *Monitor) poll(ctx context.Context, b Board) {
	defer m.wg.Done()
	tick := time.NewTicker(m.cfg.Period)
	defer tick.Stop()
	for {
		st, err := b.Source.Status(ctx)
		if ctx.Err() != nil {
			return // a read cut short by Stop is not a sample
		}
		m.record(b.Name, st, err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *Monitor) record(board string, st Status, err error) {
	at := st.ReadAt
	if at.IsZero() {
		at = time.Now()
	}
	var evs []Event
	m.mu.Lock()
	bs := m.series[board]
	v := bs.tr.Observe(st, err)
	s := Sample{At: at, Locked: v.Locked, Cond: v.Cond}
	if err != nil {
		s.Err = err.Error()
	} else {
		s.Detail = v.Detail
		s.State, s.Offset, s.PathDelay, s.GM, s.Ingress = st.PortState, st.Offset, st.MeanPathDelay, st.GMIdentity, st.LastSyncIngress.Ns
		s.HasPHC, s.PHCSysOffset, s.PHCSysDelay = st.HasPHC, st.PHCSysOffset, st.PHCSysDelay
	}
	if m.cfg.MaxSamples > 0 && len(bs.samples) >= m.cfg.MaxSamples {
		bs.overflow++
	} else {
		bs.samples = append(bs.samples, s)
	}
	if err == nil && st.PortState == PortStateSlave {
		if bs.lastGM != 0 && st.GMIdentity != bs.lastGM {
			evs = append(evs, Event{At: at, Board: board, Kind: EventGMChanged, Verdict: v, PrevGM: bs.lastGM, GM: st.GMIdentity})
		}
		bs.lastGM = st.GMIdentity
	}
	switch {
	case v.Locked && !bs.locked:
		evs = append(evs, Event{At: at, Board: board, Kind: EventLocked, Recovered: bs.lost, Verdict: v})
		bs.locked = true
	case !v.Locked && bs.locked:
		evs = append(evs, Event{At: at, Board: board, Kind: EventLockLost, Verdict: v})
		bs.locked, bs.lost = false, true
	}
	bs.last = v
	for _, e := range evs {
		if len(m.evlog) < m.cfg.MaxEvents {
			m.evlog = append(m.evlog, e)
		} else {
			m.evOver++
		}
	}
	m.mu.Unlock()
	for _, e := range evs {
		m.cfg.Logger.Info("timesync event", "board", e.Board, "kind", e.Kind, "cond", e.Verdict.Cond, "detail", e.Verdict.Detail)
		select {
		case m.events <- e:
		default:
			m.drop.Add(1)
		}
		if m.cfg.OnEvent != nil {
			m.cfg.OnEvent(e)
		}
	}
}

// BoardWindow is one board's clock quality over a time window.
type BoardWindow struct {
	Board string `json:"board"`
	// Samples is how many samples bracket and fill the window (the last at
	// or before From, those inside, the first at or after To).
	Samples int `json:"samples"`
	// Locked is true when every one of those samples was locked.
	Locked bool `json:"locked"`
	// Reason says why not (first unlocked sample, or missing coverage).
	Reason string `json:"reason,omitempty"`
	// MaxAbsOffset is the largest |offset from master| among them.
	MaxAbsOffset time.Duration `json:"max_abs_offset_ns"`
	// MaxPathDelay is the largest mean path delay among them.
	MaxPathDelay time.Duration `json:"max_path_delay_ns"`
	// Bound is this board's clock uncertainty over the window: the largest
	// |offset| plus, with a PHC, |PHC↔system offset| + its read window.
	Bound time.Duration `json:"bound_ns"`
}

// WindowQuality answers "can one-way latencies measured between From and
// To be trusted, and to within what?".
type WindowQuality struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Locked is true when every board was locked throughout.
	Locked bool `json:"locked"`
	// Bound is the sum of the boards' bounds: a one-way latency from one
	// of these boards to another is uncertain by at most this much.
	Bound  time.Duration `json:"bound_ns"`
	Boards []BoardWindow `json:"boards"`
}

// Window evaluates [from, to] over the named boards (none: all boards).
// Pass the two boards of a one-way latency to get that latency's bound.
func (m *Monitor) Window(from, to time.Time, boards ...string) (WindowQuality, error) {
	if to.Before(from) {
		return WindowQuality{}, fmt.Errorf("%w: window ends (%s) before it starts (%s)", ErrBadConfig, to, from)
	}
	if len(boards) == 0 {
		for _, b := range m.boards {
			boards = append(boards, b.Name)
		}
	}
	wq := WindowQuality{From: from, To: to, Locked: true}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range boards {
		bs, ok := m.series[name]
		if !ok {
			return WindowQuality{}, fmt.Errorf("%w %q", ErrUnknownBoard, name)
		}
		bw := EvaluateWindow(bs.samples, from, to)
		bw.Board = name
		wq.Locked = wq.Locked && bw.Locked
		wq.Bound += bw.Bound
		wq.Boards = append(wq.Boards, bw)
	}
	return wq, nil
}

// EvaluateWindow judges one board's samples (sorted by At) over
// [from, to]. The window is locked only if the last sample at or before
// from, every sample inside, and the first sample at or after to are all
// locked: lock is known only at polls, so the window must be bracketed.
func EvaluateWindow(samples []Sample, from, to time.Time) BoardWindow {
	var bw BoardWindow
	first := sort.Search(len(samples), func(i int) bool { return samples[i].At.After(from) }) - 1
	if first < 0 {
		bw.Reason = "no sample at or before the window start"
		return bw
	}
	last := sort.Search(len(samples), func(i int) bool { return !samples[i].At.Before(to) })
	if last == len(samples) {
		bw.Reason = "no sample at or after the window end yet"
		// Still report the offsets seen so far.
		last = len(samples) - 1
	}
	bw.Locked = bw.Reason == ""
	for _, s := range samples[first : last+1] {
		bw.Samples++
		if !s.Locked && bw.Reason == "" {
			bw.Locked = false
			bw.Reason = fmt.Sprintf("sample at %s not locked: %s", s.At.Format(time.RFC3339Nano), s.Cond)
			if s.Detail != "" {
				// Say why, with the values: a refused grandmaster or
				// path shows in the report as such.
				bw.Reason += " (" + s.Detail + ")"
			}
		}
		if s.Err != "" {
			continue
		}
		if o := abs(s.Offset); o > bw.MaxAbsOffset {
			bw.MaxAbsOffset = o
		}
		if s.PathDelay > bw.MaxPathDelay {
			bw.MaxPathDelay = s.PathDelay
		}
		if e := s.clockError(); e > bw.Bound {
			bw.Bound = e
		}
	}
	return bw
}
