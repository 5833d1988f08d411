// Package scopesim is a simulated SCPI oscilloscope on a real TCP socket
// (loopback): it speaks the Tektronix 4/5/6 Series, Keysight InfiniiVision,
// Rigol and Siglent command subsets the scopes/lxi drivers use, computes
// real DELAY statistics from the edges its channels are fed ([EdgeSource]),
// and has fault switches (slow replies, dropped replies, garbage, error
// queue entries, "no measurement" results) for transport tests.
//
// It is as strict as the programming guides on what bites real users: an
// undefined header or a bad parameter is not executed, queues -113 (or the
// Tektronix event 113) and, for a query, sends no reply at all; each Rigol
// family (DS1000Z, MSO5000, DHO800/900, chosen by the *IDN? model) accepts
// only its own command table; statistics windows roll as the instruments'
// do (Rigol COUNt default 1000, Keysight MCOunt, Siglent MAXCount); the
// no-result values are the vendors' own (9.91E37, 9.9E37, ****); stopped
// acquisition (ACQuire:STATE, :STOP, :TRIGger:STOP) takes no new edges; a
// reply can be late, dropped, garbled or cut into many small TCP writes
// (fault switches). A Tektronix session starts with long headers on (query
// replies carry the command header until HEADer OFF), and a new Tektronix
// DELAY measurement's second source is its first until SOUrce2 is set.
package scopesim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

// Dialect is the vendor command set the simulator speaks.
type Dialect int

// Dialects.
const (
	Tek Dialect = iota
	Keysight
	Rigol
	Siglent
)

// String returns "tek", "keysight", "rigol" or "siglent".
func (d Dialect) String() string {
	switch d {
	case Tek:
		return "tek"
	case Keysight:
		return "keysight"
	case Rigol:
		return "rigol"
	case Siglent:
		return "siglent"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// UnmarshalText parses a dialect name.
func (d *Dialect) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "tek", "tektronix":
		*d = Tek
	case "keysight":
		*d = Keysight
	case "rigol":
		*d = Rigol
	case "siglent":
		*d = Siglent
	default:
		return fmt.Errorf("scopesim: unknown dialect %q (want tek, keysight, rigol or siglent)", b)
	}
	return nil
}

// Config configures [Start].
type Config struct {
	Dialect Dialect
	// Listen is the TCP address; default "127.0.0.1:0" (a free port).
	Listen string
	// Channels maps 1-based channel numbers to their edge sources. The
	// simulator reads each source from its own goroutine until io.EOF or
	// Close.
	Channels map[int]EdgeSource
	// IDN overrides the *IDN? reply (e.g. a DS1054Z for the Rigol
	// dialect's DS1000Z family).
	IDN string
	// VXI11 also serves VXI-11: a portmapper (on PortmapperListen, default
	// 127.0.0.1:0 — port 111 needs root) and the core channel. Only the
	// core channel procedures a client needs are implemented.
	VXI11            bool
	PortmapperListen string
	// TimebaseScale is the horizontal scale in seconds per division the
	// instrument reports (10 divisions on screen; 12 on a DS1000Z);
	// default 0.1 s/div, so delays up to 1 s are on screen.
	TimebaseScale float64
	// MaxEdges bounds the edges kept per channel since the last reset;
	// older edges are dropped. Default 1<<20.
	MaxEdges int
	// Logger receives debug traces; nil discards.
	Logger *slog.Logger
}

// Server is a running simulator. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	ln     net.Listener
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	log    *slog.Logger

	mu       sync.Mutex
	edges    map[int][]scopes.Edge
	floor    int64 // edges at or before this time (source clock) predate the last reset
	hasFloor bool
	meas     measState
	errq     []queued
	esr      int
	ese      int  // *ESE mask (IEEE 488.2; masks only the status byte's ESB bit)
	header   bool // Tektronix long headers
	conns    map[net.Conn]struct{}
	closed   bool
	slow     time.Duration
	drop     int
	garbage  int
	nomeas   bool
	// Periodic faults: every lateEvery-th reply is held back lateBy,
	// every garbageEvery-th is junk; replies counts every reply sent.
	lateEvery, garbageEvery int
	lateBy                  time.Duration
	replies                 int
	statsFault              StatsFault
	// timebase is the horizontal scale in seconds per division.
	timebase float64
	// wfPoints is Keysight :WAVeform:POINts (0: the 1000-point default,
	// -1: MAXimum).
	wfPoints int
	cmds     []string
	rejects  []reject
	wfSrc    int // Keysight :WAVeform:SOURce
	// window is the rolling statistics window (last N delays; 0 = all):
	// Keysight MCOunt, Rigol COUNt, Siglent MAXCount.
	window int
	// stopped: acquisition stopped; arriving edges are not acquired.
	stopped  bool
	received map[int]int // edges read from each channel's source, acquired or not
	chunk    int         // reply write size (0: whole reply)
	onQuery  func(cmd string)
	rigolFam rigolFamily

	vxiLns  []net.Listener
	links   map[uint32]*vxiLink
	nextLID uint32
}

type reject struct {
	prefix string
	code   int
	text   string
}

type queued struct {
	code int
	text string
}

type measState struct {
	exists      bool
	src, dst    int
	srcE, dstE  scopes.Polarity
	limit       int  // Tektronix POPUlation:LIMIT:VALue (first N)
	limitOn     bool // Tektronix POPUlation:LIMIT:STATE
	threshold   float64
	hasThresh   bool
	stats       bool
	tekMeasName string
}

// Start listens and serves until Close. It returns once listening.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.MaxEdges <= 0 {
		cfg.MaxEdges = 1 << 20
	}
	if cfg.TimebaseScale <= 0 {
		cfg.TimebaseScale = 0.1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IDN == "" {
		cfg.IDN = map[Dialect]string{
			Tek:      "TEKTRONIX,MSO54,SIM00001,CF:91.1CT FV:2.0.3.950",
			Keysight: "KEYSIGHT TECHNOLOGIES,MSOX3104T,MYSIM00001,07.50.2021102830",
			Rigol:    "RIGOL TECHNOLOGIES,MSO5074,MS5SIM000001,00.01.03.00.01",
			Siglent:  "Siglent Technologies,SDS2104X Plus,SDS2SIM00001,3.8.12.1.1.3.8",
		}[cfg.Dialect]
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("scopesim: listen %s: %w", cfg.Listen, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ln: ln, cancel: cancel, done: make(chan struct{}), log: cfg.Logger, edges: map[int][]scopes.Edge{},
		header: cfg.Dialect == Tek, conns: map[net.Conn]struct{}{}, received: map[int]int{}, timebase: cfg.TimebaseScale}
	switch cfg.Dialect {
	case Rigol:
		s.rigolFam = rigolFamilyOf(cfg.IDN)
		if s.rigolFam != ds1000z {
			s.window = 1000 // MSO5000/DHO :MEASure:STATistic:COUNt default
		}
	case Siglent:
		s.window = 1000 // MAXCount default of this simulator (not from the guide)
	}
	for ch, src := range cfg.Channels {
		s.wg.Add(1)
		go s.ingest(rctx, ch, src)
	}
	s.wg.Add(1)
	go s.acceptOn(s.ln, s.serve)
	if cfg.VXI11 {
		if err := s.startVXI11(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Addr is the listening address ("127.0.0.1:port").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening, closes connections and waits for every goroutine.
// A second Close returns [scopes.ErrClosed].
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return scopes.ErrClosed
	}
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close()
	for _, l := range s.vxiLns {
		l.Close()
	}
	s.wg.Wait()
	return err
}

// SetSlowReplies delays every reply by d (0 turns it off).
func (s *Server) SetSlowReplies(d time.Duration) { s.mu.Lock(); s.slow = d; s.mu.Unlock() }

// LateEvery holds back every nth query reply (counting every reply sent
// since Start) by d, as a link that stalls periodically does; replies
// behind it wait, in order. n 0 turns it off.
func (s *Server) LateEvery(n int, d time.Duration) {
	s.mu.Lock()
	s.lateEvery, s.lateBy = n, d
	s.mu.Unlock()
}

// GarbageEvery replaces every nth query reply (counting every reply sent
// since Start) with binary junk; 0 turns it off.
func (s *Server) GarbageEvery(n int) { s.mu.Lock(); s.garbageEvery = n; s.mu.Unlock() }

// StatsFault is a way the simulator's delay statistics can be wrong, as
// a reply-rewriting proxy or a misconfigured instrument makes them.
type StatsFault int

// Statistics faults.
const (
	// StatsOK: the statistics the edges give.
	StatsOK StatsFault = iota
	// StatsWrongUnits: every delay statistic in nanoseconds where the
	// dialect sends seconds.
	StatsWrongUnits
	// StatsAllZero: mean, min, max and stddev 0 (what a delay from a
	// channel to itself gives), the count unchanged.
	StatsAllZero
	// StatsHuge: the mean is 9.8E+37, just below the no-measurement value.
	StatsHuge
	// StatsCountOneSpread: count 1 with min ≠ max.
	StatsCountOneSpread
)

// SetStatsFault makes every statistics reply carry f (StatsOK turns it off).
func (s *Server) SetStatsFault(f StatsFault) { s.mu.Lock(); s.statsFault = f; s.mu.Unlock() }

// ResetByOtherClient clears the statistics as another client's reset
// command would (a second session on a shared lab scope).
func (s *Server) ResetByOtherClient() { s.mu.Lock(); s.resetStats(); s.mu.Unlock() }

// SetStatsWindow sets the rolling statistics window as the front panel
// would (Keysight MCOunt, Rigol COUNt, Siglent MAXCount); 0 is unlimited.
func (s *Server) SetStatsWindow(n int) { s.mu.Lock(); s.window = n; s.mu.Unlock() }

// DropReplies makes the next n query replies vanish (processed, never sent).
func (s *Server) DropReplies(n int) { s.mu.Lock(); s.drop = n; s.mu.Unlock() }

// GarbageReplies replaces the next n query replies with binary junk.
func (s *Server) GarbageReplies(n int) { s.mu.Lock(); s.garbage = n; s.mu.Unlock() }

// QueueError pushes an entry onto the error/event queue and sets the
// command-error bit of the event status register, as the instrument does
// when it rejects a command.
func (s *Server) QueueError(code int, text string) {
	s.mu.Lock()
	s.errq = append(s.errq, queued{code, text})
	s.esr |= 32
	s.mu.Unlock()
}

// RejectCommand makes the instrument refuse the next command whose text
// starts with prefix (case-insensitive): it is not executed, the error
// (code, text) is queued and the event status register's execution-error
// bit (16) is set — what a real scope does with a setting it cannot apply.
func (s *Server) RejectCommand(prefix string, code int, text string) {
	s.mu.Lock()
	s.rejects = append(s.rejects, reject{strings.ToUpper(prefix), code, text})
	s.mu.Unlock()
}

// SetReplyChunk makes every raw-socket reply leave in writes of at most n
// bytes, each flushed on its own (TCP_NODELAY), as instruments that send a
// block in many small TCP segments do; 0 sends whole replies.
func (s *Server) SetReplyChunk(n int) { s.mu.Lock(); s.chunk = n; s.mu.Unlock() }

// OnQuery calls f with each query before it is executed (outside the
// simulator's lock, on the connection's goroutine), so a test can make
// acquisitions happen between the queries of one read. nil removes it.
func (s *Server) OnQuery(f func(cmd string)) { s.mu.Lock(); s.onQuery = f; s.mu.Unlock() }

// Received returns how many edges channel ch's source delivered since
// Start, whether acquired or not (acquisition stopped, before a reset).
func (s *Server) Received(ch int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[ch]
}

// Acquiring reports whether acquisition runs (not stopped by the client).
func (s *Server) Acquiring() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.stopped
}

// SetNoMeasurement makes every statistic read as the dialect's "no
// measurement" value (9.91E37 Tek, 9.9E+37 Keysight/Rigol, **** Siglent).
func (s *Server) SetNoMeasurement(on bool) { s.mu.Lock(); s.nomeas = on; s.mu.Unlock() }

// Commands returns every command header received so far (for tests that
// check what a driver sent).
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cmds...)
}

// EdgeCount returns how many edges channel ch holds since the last reset.
func (s *Server) EdgeCount(ch int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.edges[ch])
}

func (s *Server) ingest(ctx context.Context, ch int, src EdgeSource) {
	defer s.wg.Done()
	for {
		t, rising, err := src.ReadEdge(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				s.log.Warn("scopesim: channel source failed", "channel", ch, "err", err)
			}
			return
		}
		s.mu.Lock()
		s.received[ch]++
		if s.stopped {
			s.mu.Unlock() // a stopped scope acquires nothing
			continue
		}
		if s.hasFloor && t <= s.floor {
			// A channel whose reader lags delivers edges from before the
			// reset; a scope would not have them in its statistics.
			s.mu.Unlock()
			continue
		}
		e := s.edges[ch]
		if len(e) >= s.cfg.MaxEdges {
			e = e[:copy(e, e[len(e)/2:])]
		}
		s.edges[ch] = append(e, scopes.Edge{TimeNs: t, Rising: rising})
		s.mu.Unlock()
	}
}

// acceptOn accepts connections on ln until it is closed, tracks each
// (Close closes them) and serves it on its own goroutine; it runs on a
// goroutine counted in s.wg.
func (s *Server) acceptOn(ln net.Listener, serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		for _, cmd := range strings.Split(sc.Text(), ";") {
			cmd = strings.TrimSpace(cmd)
			if cmd == "" {
				continue
			}
			s.mu.Lock()
			hook := s.onQuery
			s.mu.Unlock()
			if hook != nil && strings.Contains(cmd, "?") {
				hook(cmd)
			}
			reply, isQuery := s.execute(cmd)
			if !isQuery {
				continue
			}
			if !s.sendReply(func(r string) error { return s.writeChunked(c, r) }, reply) {
				return
			}
		}
	}
}

// writeChunked writes r whole, or in SetReplyChunk pieces.
func (s *Server) writeChunked(c net.Conn, r string) error {
	s.mu.Lock()
	n := s.chunk
	s.mu.Unlock()
	if n <= 0 {
		_, err := io.WriteString(c, r)
		return err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	for len(r) > 0 {
		k := min(n, len(r))
		if _, err := io.WriteString(c, r[:k]); err != nil {
			return err
		}
		r = r[k:]
	}
	return nil
}

// sendReply applies the fault switches and emits reply plus its newline;
// false means the connection is gone.
func (s *Server) sendReply(emit func(string) error, reply string) bool {
	s.mu.Lock()
	slow := s.slow
	drop := s.drop > 0
	if drop {
		s.drop--
	}
	garbage := !drop && s.garbage > 0
	if garbage {
		s.garbage--
	}
	s.replies++
	if s.lateEvery > 0 && s.replies%s.lateEvery == 0 {
		slow += s.lateBy
	}
	if s.garbageEvery > 0 && s.replies%s.garbageEvery == 0 {
		garbage = !drop
	}
	s.mu.Unlock()
	if slow > 0 {
		t := time.NewTimer(slow)
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return false
		}
	}
	if drop {
		return true
	}
	if garbage {
		reply = "\x00\xff\x1bGARBAGE\x7f"
	}
	return emit(reply+"\n") == nil
}

// execute runs one command; it returns the reply and whether it was a query.
func (s *Server) execute(cmd string) (string, bool) {
	header, args, _ := strings.Cut(cmd, " ")
	args = strings.TrimSpace(args)
	isQuery := strings.HasSuffix(header, "?")
	h := strings.TrimSuffix(header, "?")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds = append(s.cmds, cmd)
	for i, r := range s.rejects {
		if strings.HasPrefix(strings.ToUpper(cmd), r.prefix) {
			s.rejects = append(s.rejects[:i], s.rejects[i+1:]...)
			s.errq = append(s.errq, queued{r.code, r.text})
			s.esr |= 16
			return "", false
		}
	}
	reply, ok := s.common(h, isQuery, args)
	if !ok {
		switch s.cfg.Dialect {
		case Tek:
			reply, ok = s.tek(h, isQuery, args)
		case Keysight:
			reply, ok = s.keysight(h, isQuery, args)
		case Rigol:
			reply, ok = s.rigol(h, isQuery, args)
		case Siglent:
			reply, ok = s.siglent(h, isQuery, args)
		}
	}
	if !ok {
		s.undefined(cmd)
		// A real instrument sends nothing for an undefined query; the
		// client times out. Mimic that by not replying.
		return "", false
	}
	if isQuery && s.cfg.Dialect == Tek && s.header && !strings.HasPrefix(h, "*") {
		reply = ":" + strings.ToUpper(strings.TrimPrefix(h, ":")) + " " + reply
	}
	return reply, isQuery
}

func (s *Server) undefined(cmd string) {
	s.esr |= 32
	switch s.cfg.Dialect {
	case Tek:
		s.errq = append(s.errq, queued{113, "Undefined header; Command not found; " + cmd})
	default:
		s.errq = append(s.errq, queued{-113, "Undefined header"})
	}
}

// common handles IEEE 488.2 commands shared by all dialects.
func (s *Server) common(h string, q bool, a string) (string, bool) {
	switch strings.ToUpper(h) {
	case "*IDN":
		return s.cfg.IDN, q
	case "*CLS":
		s.errq, s.esr = nil, 0
		return "", !q
	case "*OPC":
		if q {
			return "1", true
		}
		s.esr |= 1
		return "", true
	case "*ESR":
		v := s.esr
		s.esr = 0
		return fmt.Sprint(v), q
	case "*ESE":
		if q {
			return fmt.Sprint(s.ese), true
		}
		v, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil || v < 0 || v > 255 {
			return "", false
		}
		s.ese = v
		return "", true
	case "*RST":
		s.meas = measState{}
		return "", !q
	}
	return "", false
}

// resetStats forgets edges seen so far. Channels are read by separate
// goroutines, so one may lag another; the newest edge time seen on any
// channel becomes a floor below which late-arriving edges are dropped, as
// if every channel had been cleared at the same instant.
func (s *Server) resetStats() {
	for ch, e := range s.edges {
		if n := len(e); n > 0 && (!s.hasFloor || e[n-1].TimeNs > s.floor) {
			s.floor, s.hasFloor = e[n-1].TimeNs, true
		}
		s.edges[ch] = e[:0]
	}
}

// delays pairs the stored edges like the scope's DELAY measurement and
// returns the delays in seconds (empty when nothing is configured or the
// no-measurement fault is on).
func (s *Server) delays() []float64 {
	m := s.meas
	if !m.exists || s.nomeas {
		return nil
	}
	first := 0 // Tektronix population limit: the first N after the reset
	if m.limitOn {
		first = m.limit
	}
	ns := scopes.PairDelays(nil, s.edges[m.src], s.edges[m.dst], m.srcE, m.dstE, first)
	if s.window > 0 && len(ns) > s.window {
		ns = ns[len(ns)-s.window:] // rolling window: the last N
	}
	return scopes.NsToSeconds(nil, ns)
}

// stats computes the DELAY statistics from the stored edges, with the
// statistics fault applied.
func (s *Server) stats() scopes.Stats {
	st := scopes.StatsFromDelays(s.delays())
	if !st.Mean.OK {
		return st
	}
	switch s.statsFault {
	case StatsWrongUnits:
		for _, v := range []*scopes.Value{&st.Mean, &st.Min, &st.Max, &st.StdDev} {
			v.V *= 1e9
		}
	case StatsAllZero:
		st.Mean, st.Min, st.Max, st.StdDev = scopes.Some(0), scopes.Some(0), scopes.Some(0), scopes.Some(0)
	case StatsHuge:
		st.Mean = scopes.Some(9.8e37)
	case StatsCountOneSpread:
		st.Count.N = 1
		st.Max = scopes.Some(st.Min.V + 1e-6)
	}
	return st
}

func popErr(q *[]queued) (queued, bool) {
	if len(*q) == 0 {
		return queued{}, false
	}
	e := (*q)[0]
	*q = (*q)[1:]
	return e, true
}
