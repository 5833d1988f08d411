// Package live is the controller's Prometheus / OpenMetrics endpoint while
// suites and soaks run: per-case latency quantiles, message counts, the
// measured process's CPU and RSS and a reaction's miss rate, verdicts,
// soak progress and ETA, and per-board PTP state, RSS and CPU.
//
// # Label cardinality
//
// Labels are bounded by the run, never by traffic: suite and case (one
// series per recorded case and figure; a run has ~86, capped at MaxCases — cases
// past the cap are counted in hilrig_live_dropped_cases_total, not
// exported), quantile (0.5, 0.99, 1), kind (sent, delivered, lost) and
// board (the rack's boards, capped at MaxBoards), and flow (a suite
// flow's case name or a soak stream, per subscribing board: capped at
// MaxFlows board/flow pairs, the rest counted in
// hilrig_live_dropped_flows_total), and bound (the soak's running
// verdict: one of soak.RunningBounds, five kinds of bound, never a
// stream or board). No label takes a sequence number, a time, a payload
// or an error text.
//
// # Feeding
//
// The suites feed it as they run, not only when a case ends: every agent
// window of a running flow ([Metrics.FlowWindow], from the suite steps),
// every closed soak window ([Metrics.SoakWindow], from the soak runner),
// the soak's verdict so far at every closed window ([Metrics.SoakVerdict]),
// soak progress at every drain ([Metrics.SoakProgress]) and every
// finished case ([Metrics.ObserveCase]).
//
// Metrics is safe for concurrent use; its update methods never block on
// the network. A nil *Metrics ignores every update, so callers feed it
// unconditionally whether or not metrics_listen is set.
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// Caps on label values (see the package comment).
const (
	MaxCases  = 1024
	MaxBoards = 64
	MaxFlows  = 512
)

// Metrics is the registry the endpoint serves.
type Metrics struct {
	reg *prometheus.Registry

	latency    *prometheus.GaugeVec
	messages   *prometheus.GaugeVec
	caseResult *prometheus.GaugeVec
	caseCPU    *prometheus.GaugeVec
	caseRSS    *prometheus.GaugeVec
	caseMiss   *prometheus.GaugeVec
	verdict    prometheus.Gauge
	soakDone   prometheus.Gauge
	soakETA    prometheus.Gauge
	ptpLocked  *prometheus.GaugeVec
	ptpOffset  *prometheus.GaugeVec
	rss        *prometheus.GaugeVec
	cpu        *prometheus.GaugeVec
	dropped    prometheus.Counter

	flowLatency  *prometheus.GaugeVec
	flowWindow   *prometheus.GaugeVec
	flowTotal    *prometheus.CounterVec
	soakWindows  prometheus.Counter
	droppedFlows prometheus.Counter
	soakPass     prometheus.Gauge
	soakBound    *prometheus.GaugeVec

	mu    sync.Mutex
	cases map[string]report.Verdict
	// soak is the running soak's verdict so far (NoBounds: none yet).
	soak   report.Verdict
	boards map[string]bool
	flows  map[[2]string]bool
}

// New returns a registry with every metric registered.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), cases: map[string]report.Verdict{}, boards: map[string]bool{},
		flows: map[[2]string]bool{}, soak: report.NoBounds}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.latency = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_latency_seconds",
		Help: "Latency of a recorded case at a quantile (1 = max), by the case's method."}, []string{"suite", "case", "quantile"})
	m.messages = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_messages",
		Help: "Messages of a recorded case: sent, delivered, lost (by sequence gaps)."}, []string{"suite", "case", "kind"})
	m.caseResult = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_pass",
		Help: "Verdict of a recorded case: 1 pass, 0 fail, -1 not judged (no bounds)."}, []string{"suite", "case"})
	m.caseCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_cpu_ratio",
		Help: "CPU of a recorded case's measured process over the case, in cores (a reaction case: the device under test's program)."}, []string{"suite", "case"})
	m.caseRSS = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_rss_bytes",
		Help: "Resident set of a recorded case's measured process at its end (a reaction case: the device under test's program)."}, []string{"suite", "case"})
	m.caseMiss = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_case_miss_ratio",
		Help: "A reaction case's miss rate: stimuli without an answer within the deadline, per stimulus (0..1)."}, []string{"suite", "case"})
	m.verdict = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hilrig_run_pass",
		Help: "Current verdict of the run so far (recorded cases and the running soak's verdict so far): 1 pass, 0 fail, -1 nothing judged yet."})
	m.soakDone = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hilrig_soak_progress_ratio", Help: "Fraction of the planned soak elapsed (0..1)."})
	m.soakETA = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hilrig_soak_eta_seconds", Help: "Seconds until the soak's planned end."})
	m.ptpLocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_board_ptp_locked", Help: "1 when the board's PTP servo is locked."}, []string{"board"})
	m.ptpOffset = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_board_ptp_offset_seconds", Help: "Board's last PTP offset from its master."}, []string{"board"})
	m.rss = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_board_rss_bytes", Help: "RSS of the board's measured endpoints."}, []string{"board"})
	m.cpu = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_board_cpu_ratio", Help: "CPU of the board's measured endpoints, in cores."}, []string{"board"})
	m.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "hilrig_live_dropped_cases_total", Help: "Cases not exported because MaxCases was reached."})
	m.flowLatency = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_flow_window_latency_seconds",
		Help: "Latency of a running flow's last closed window at the subscribing board, at a quantile (1 = max)."}, []string{"board", "flow", "quantile"})
	m.flowWindow = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_flow_window_messages",
		Help: "Messages of a running flow's last closed window at the subscribing board: sent, delivered, lost."}, []string{"board", "flow", "kind"})
	m.flowTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hilrig_flow_messages_total",
		Help: "Messages of a flow so far at the subscribing board (sum of its windows): sent, delivered, lost."}, []string{"board", "flow", "kind"})
	m.soakWindows = prometheus.NewCounter(prometheus.CounterOpts{Name: "hilrig_soak_windows_total", Help: "Soak windows closed (appended to the checkpoint)."})
	m.droppedFlows = prometheus.NewCounter(prometheus.CounterOpts{Name: "hilrig_live_dropped_flows_total", Help: "Flow windows not exported because MaxFlows was reached."})
	m.soakPass = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hilrig_soak_pass",
		Help: "The running soak's verdict so far, at its last closed window: 1 pass so far, 0 failing (a bound broke for good), -1 no window yet. Trend bounds are judged at the end only."})
	m.soakBound = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hilrig_soak_bound_failing",
		Help: "1 when the running soak broke this kind of bound so far, 0 while it holds; one series per bound the soak sets."}, []string{"bound"})
	for _, c := range []prometheus.Collector{m.latency, m.messages, m.caseResult, m.caseCPU, m.caseRSS, m.caseMiss, m.verdict, m.soakDone, m.soakETA,
		m.ptpLocked, m.ptpOffset, m.rss, m.cpu, m.dropped, m.flowLatency, m.flowWindow, m.flowTotal, m.soakWindows, m.droppedFlows,
		m.soakPass, m.soakBound} {
		f(c)
	}
	m.verdict.Set(-1)
	m.soakPass.Set(-1)
	return m
}

func verdictValue(v report.Verdict) float64 {
	switch v {
	case report.Pass:
		return 1
	case report.Fail:
		return 0
	}
	return -1
}

// ObserveCase exports a finished (Finalized) case and updates the run's
// verdict.
func (m *Metrics) ObserveCase(c *report.Case) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := c.Key()
	if _, ok := m.cases[k]; !ok && len(m.cases) >= MaxCases {
		m.dropped.Inc()
		return
	}
	m.cases[k] = c.Verdict
	s := c.Summary
	if c.Histogram != nil && s.Count == 0 {
		s = c.Histogram.Summary()
	}
	if s.Count > 0 {
		for q, v := range map[string]int64{"0.5": s.P50, "0.99": s.P99, "1": s.Max} {
			m.latency.WithLabelValues(c.Suite, c.Name, q).Set(float64(v) / 1e9)
		}
	}
	m.messages.WithLabelValues(c.Suite, c.Name, "sent").Set(float64(c.Sent))
	m.messages.WithLabelValues(c.Suite, c.Name, "delivered").Set(float64(c.Delivered))
	m.messages.WithLabelValues(c.Suite, c.Name, "lost").Set(float64(c.Lost))
	m.caseResult.WithLabelValues(c.Suite, c.Name).Set(verdictValue(c.Verdict))
	// Figures a case may not have: no series rather than a false 0.
	if c.CPUPercent > 0 {
		m.caseCPU.WithLabelValues(c.Suite, c.Name).Set(c.CPUPercent / 100)
	}
	if c.RSSBytes > 0 {
		m.caseRSS.WithLabelValues(c.Suite, c.Name).Set(float64(c.RSSBytes))
	}
	if r, ok := c.Extra[report.ExtraDUTMissRate]; ok {
		m.caseMiss.WithLabelValues(c.Suite, c.Name).Set(r)
	}
	m.setRunLocked()
}

// setRunLocked sets the run's verdict from the recorded cases and the
// running soak's verdict so far: fail if any failed, pass if any passed,
// else unjudged. Called with m.mu held.
func (m *Metrics) setRunLocked() {
	run := m.soak
	for _, v := range m.cases {
		if run == report.Fail {
			break
		}
		if v == report.Fail || v == report.Pass {
			run = v
		}
	}
	m.verdict.Set(verdictValue(run))
}

// SoakVerdict exports the running soak's verdict so far (a
// soak.Running's checks at a closed window): hilrig_soak_pass, one
// hilrig_soak_bound_failing series per check, and hilrig_run_pass, which
// fails with it. Checks whose bound is not one of soak.RunningBounds are
// ignored (the label stays a closed set). No checks (no window yet) reads
// as unjudged. Call it at every closed window; each call replaces the
// previous soak's state. Does not block.
func (m *Metrics) SoakVerdict(checks []soak.RunningCheck) {
	if m == nil {
		return
	}
	v := report.NoBounds
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for _, c := range checks {
		if !slices.Contains(soak.RunningBounds, c.Bound) {
			continue
		}
		set[c.Bound] = true
		failing := 0.0
		switch {
		case c.Verdict == report.Fail:
			failing, v = 1, report.Fail
		case c.Verdict == report.Pass && v != report.Fail:
			v = report.Pass
		}
		m.soakBound.WithLabelValues(c.Bound).Set(failing)
	}
	for _, b := range soak.RunningBounds {
		if !set[b] {
			// Not set by this soak (an earlier one's): deleted rather than
			// Reset up front, so a scrape never sees a held bound vanish.
			m.soakBound.DeleteLabelValues(b)
		}
	}
	m.soak = v
	m.soakPass.Set(verdictValue(v))
	m.setRunLocked()
}

// SoakProgress exports a soak's progress: elapsed of planned, and the ETA.
func (m *Metrics) SoakProgress(elapsed, planned time.Duration) {
	if m == nil || planned <= 0 {
		return
	}
	m.soakDone.Set(min(1, float64(elapsed)/float64(planned)))
	m.soakETA.Set(max(0, (planned - elapsed).Seconds()))
}

// Board exports a board's PTP state and resource use.
func (m *Metrics) Board(name string, ptpLocked bool, offset time.Duration, rssBytes int64, cpuPercent float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.boardLocked(name, &soak.PTPSample{Locked: ptpLocked, OffsetNs: int64(offset)}, rssBytes, cpuPercent)
}

// BoardPTP exports a board's PTP lock state and last offset from its
// master (a suite flow's PTP gate, between soak windows). Does not block.
func (m *Metrics) BoardPTP(name string, locked bool, offset time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.boardLocked(name, &soak.PTPSample{Locked: locked, OffsetNs: int64(offset)}, 0, -1)
}

// BoardPTPUnread marks board's PTP state as unreadable (its ptp4l gone or
// not answering): locked 0 and the offset NaN — no measurement, rather
// than a 0 that reads as a perfect offset. Safe for concurrent use.
func (m *Metrics) BoardPTPUnread(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.boardLocked(name, &soak.PTPSample{}, 0, -1)
	if m.boards[name] {
		m.ptpOffset.WithLabelValues(name).Set(math.NaN())
	}
}

// boardLocked exports a board's resources, and its PTP state when ptp is
// not nil (a board without PTP gets no PTP series rather than a false
// "unlocked"). Called with m.mu held.
func (m *Metrics) boardLocked(name string, ptp *soak.PTPSample, rssBytes int64, cpuPercent float64) {
	if !m.boards[name] && len(m.boards) >= MaxBoards {
		return
	}
	m.boards[name] = true
	if ptp != nil {
		l := 0.0
		if ptp.Locked {
			l = 1
		}
		m.ptpLocked.WithLabelValues(name).Set(l)
		m.ptpOffset.WithLabelValues(name).Set(float64(ptp.OffsetNs) / 1e9)
	}
	if rssBytes > 0 {
		m.rss.WithLabelValues(name).Set(float64(rssBytes))
	}
	if cpuPercent >= 0 {
		m.cpu.WithLabelValues(name).Set(cpuPercent / 100)
	}
}

// flowLocked exports one window of flow at board (sent < 0: not known),
// or counts it as dropped past the MaxFlows cap. Called with m.mu held.
func (m *Metrics) flowLocked(board, flow string, s report.Summary, sent, delivered, lost int64) {
	k := [2]string{board, flow}
	if !m.flows[k] && len(m.flows) >= MaxFlows {
		m.droppedFlows.Inc()
		return
	}
	m.flows[k] = true
	if s.Count > 0 {
		m.flowLatency.WithLabelValues(board, flow, "0.5").Set(float64(s.P50) / 1e9)
		m.flowLatency.WithLabelValues(board, flow, "0.99").Set(float64(s.P99) / 1e9)
		m.flowLatency.WithLabelValues(board, flow, "1").Set(float64(s.Max) / 1e9)
	}
	for _, kv := range []struct {
		kind string
		n    int64
	}{{"sent", sent}, {"delivered", delivered}, {"lost", lost}} {
		if kv.kind == "sent" && sent < 0 {
			continue // a subscriber's window does not know what was sent
		}
		m.flowWindow.WithLabelValues(board, flow, kv.kind).Set(float64(kv.n))
		m.flowTotal.WithLabelValues(board, flow, kv.kind).Add(float64(max(kv.n, 0)))
	}
}

// FlowWindow is one agent window of a running flow's subscriber, as the
// endpoint exports it. The caller converts its agent's window into it, so
// report/live stays downstream of the agent protocol (data flows rack →
// rig → agent → report, never back).
type FlowWindow struct {
	// Latency of the window's messages, ns; nil when none arrived.
	Latency *report.Histogram
	// Received and Lost are the window's messages (not running totals).
	Received, Lost uint64
	// SpanNs is the window's length and CPUNs the agent process's CPU time
	// (user+system) in it, both ns; CPU is not exported when either is 0.
	SpanNs, CPUNs int64
	// RSSBytes is the agent's resident set at the window's end.
	RSSBytes int64
}

// FlowWindow exports one agent window of a running flow's subscriber on
// board: the window's latency quantiles, delivered and lost, and the
// board's RSS and CPU over the window. Call it once per window (the
// totals add up). Does not block.
func (m *Metrics) FlowWindow(board, flow string, w *FlowWindow) {
	if m == nil || w == nil {
		return
	}
	var s report.Summary
	if w.Latency != nil {
		s = w.Latency.Summary()
	}
	cpu := -1.0
	if w.SpanNs > 0 && w.CPUNs > 0 {
		cpu = 100 * float64(w.CPUNs) / float64(w.SpanNs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flowLocked(board, flow, s, -1, int64(w.Received), int64(w.Lost))
	m.boardLocked(board, nil, w.RSSBytes, cpu)
}

// SoakWindow exports a closed soak window: per agent (board) its PTP
// state and offset, RSS and CPU, and per stream its window latency and
// messages. Call it once per window (the totals add up). Does not block.
func (m *Metrics) SoakWindow(w *soak.Window) {
	if m == nil || w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.soakWindows.Inc()
	for i := range w.Agents {
		a := &w.Agents[i]
		m.boardLocked(a.Agent, a.PTP, a.RSSBytes, a.CPUPercent)
		for j := range a.Streams {
			st := &a.Streams[j]
			s := st.Summary
			if s.Count == 0 && st.Histogram != nil {
				s = st.Histogram.Summary()
			}
			m.flowLocked(a.Agent, st.Stream, s, st.Sent, st.Delivered, st.Lost)
		}
	}
}

// Handler serves the metrics (OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Defaults of [ServeOptions].
const (
	// DefaultMaxConns is the number of connections served at once: a
	// Prometheus pair, a Grafana and a few people with curl.
	DefaultMaxConns = 16
	// DefaultIdleTimeout outlasts a 15 s scrape interval (so a scraper
	// keeps its connection) and frees a slot held by an idle connection
	// within half a minute.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultReadTimeout bounds reading a request (a GET: headers only).
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout is Prometheus' default scrape_timeout: an
	// exposition that takes longer is useless to the scraper anyway.
	DefaultWriteTimeout = 10 * time.Second
)

// maxHeaderBytes bounds a request's headers (a scrape sends ~300 bytes);
// net/http's default, 1 MiB per connection, is far more than a scraper needs.
const maxHeaderBytes = 16 << 10

// ServeOptions tunes [Metrics.Serve]. A nil *ServeOptions, and every zero
// field, means the default.
type ServeOptions struct {
	// Logger gets the warning that the endpoint is reachable beyond this
	// host without authentication (nil: no logging).
	Logger *slog.Logger
	// MaxConns is how many connections are open at once (0:
	// DefaultMaxConns). Past it, new connections wait in the kernel's
	// accept queue, holding no descriptor of this process, until a served
	// one closes; once that queue (the listen backlog) is full the kernel
	// refuses them.
	MaxConns int
	// IdleTimeout closes a keep-alive connection that sent no request for
	// this long (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ReadTimeout bounds reading one request, headers included (0:
	// DefaultReadTimeout); headers alone must arrive within 5 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds serving one request, from the end of its headers
	// to the last byte of the response, so a reader that stops reading
	// loses its connection (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
}

// orDefault returns d when v is zero.
func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// Serve listens on addr (host:port; see fixtures' metrics_listen) and
// serves /metrics until ctx ends. It returns the bound address once
// listening; serving continues in goroutines that stop with ctx. opts nil
// means the defaults. What a client can hold is bounded: at most MaxConns
// connections (so at most that many descriptors), each closed after
// IdleTimeout idle or when a request takes longer than ReadTimeout to
// arrive or WriteTimeout to serve. The endpoint has no authentication:
// bound to an address that is not loopback, Serve logs a warning saying so.
func (m *Metrics) Serve(ctx context.Context, addr string, opts *ServeOptions) (net.Addr, error) {
	if opts == nil {
		opts = &ServeOptions{}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint %s: %w", addr, err)
	}
	if ta, ok := l.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() && opts.Logger != nil {
		opts.Logger.Warn("metrics endpoint listens beyond loopback and has no authentication: "+
			"anyone who can reach this address reads the run's metrics", "addr", l.Addr().String())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       orDefault(opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(opts.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog(opts.Logger),
	}
	ll := newLimitListener(l, orDefault(opts.MaxConns, DefaultMaxConns))
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close() // a connection still busy after a second
		}
	}()
	go func() {
		if err := srv.Serve(ll); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ll.Close()
		}
	}()
	return l.Addr(), nil
}

// errorLog sends net/http's per-connection messages (a client's TLS
// handshake on the plain port, a malformed request) to lg at debug level:
// they are about a client, not the run, and without ErrorLog they would go
// to the process's standard logger. nil lg: dropped.
func errorLog(lg *slog.Logger) *log.Logger {
	if lg == nil {
		return log.New(io.Discard, "", 0)
	}
	return slog.NewLogLogger(lg.Handler(), slog.LevelDebug)
}

// limitListener accepts at most cap(slots) connections that are open at
// once: Accept takes a slot before it accepts, and a connection's Close
// gives it back. Connections past the cap stay in the kernel's accept
// queue, costing this process no descriptor. Safe for concurrent use.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection. It returns
// net.ErrClosed once the listener is closed, also while it waits for a
// slot.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, slots: l.slots}, nil
}

// Close closes the listener and wakes an Accept waiting for a slot.
// Idempotent.
func (l *limitListener) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// limitConn gives its slot back on its first Close.
type limitConn struct {
	net.Conn
	slots     chan struct{}
	closeOnce sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { <-c.slots })
	return err
}
