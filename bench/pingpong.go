package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/hilrig/hilrig/bench/internal/sys"
	"github.com/hilrig/hilrig/internal/kind"
)

// PingPongConfig configures [PingPong]. Zero values are documented per
// field; call Defaults first when building one by hand.
type PingPongConfig struct {
	// Transport is one of [Transports].
	Transport string
	// Wait is the middleware subscriber wait strategy. The zero value is
	// futex, as everywhere else (agentproto, the middleware); hilrig
	// bench's --wait defaults to spin. Ignored by the baselines (their
	// name says it).
	Wait kind.Wait
	// Path is the middleware publish path: copy (default, Send) or loan.
	Path string
	// Sizes are payload sizes in bytes (>= 8: the first 8 carry the
	// sequence number). Default {16}.
	Sizes []int
	// RoundTrips timed per size (default 20000) after Warmup untimed ones
	// (default 1000).
	RoundTrips, Warmup int
	// Pin pins the ping thread to PingCPU and the pong thread to PongCPU;
	// without it both float (PingCPU/PongCPU are ignored and reported -1).
	Pin              bool
	PingCPU, PongCPU int
	// NetNS runs udp/raw-udp ends in two network namespaces made for the
	// run (root).
	NetNS bool
	// Reliable selects the Reliable QoS for middleware topics.
	Reliable bool
	// Depth is the middleware contracts' history depth (0: 1). For
	// reliable UDP it is the send window: with 1 every message waits for
	// the acknowledgement of the one before.
	Depth int
	// KeepLast makes a reliable UDP depth a keep-last history instead of
	// a send window (UDPConfig.KeepLast): DDS RELIABLE KEEP_LAST, what
	// ddsperf runs.
	KeepLast bool
	// Dedicated makes both UDP subscribers' consumers dedicated readers
	// (UDPConfig.DedicatedReader): their blocking waits keep their Go
	// processor, as the threads of a C program blocked in recvmsg do.
	// The bench's ping and pong loops are alone on their threads, so
	// this is their honest setting; off, it shows the cost of handing
	// the processor back for every message.
	Dedicated bool
	// Datagram is raw-udp's payload per datagram; 0 sends the same IP
	// packets as the middleware's fragments: 65507 B on loopback (a full
	// 64 KiB IP packet), 1472 B across the namespaces' veth (MTU 1500).
	Datagram int
	// RawGSO makes raw-udp send a message's datagrams in runs, one
	// sendmsg with UDP_SEGMENT per run, and read them with UDP_GRO, as
	// the middleware does: the same datagrams on the wire, fewer system
	// calls, so the floor plain UDP can reach. It applies when two
	// datagrams fit one run (Datagram ≤ 32753 B: across --netns, not
	// with loopback's default 65507 B). A kernel that refuses either
	// option fails the run. `hilrig bench pingpong` sets it (--raw-gso).
	RawGSO bool
	// Compare also runs the matching baseline, alternating in Rounds
	// rounds (default 4), and reports their ratio.
	Compare bool
	Rounds  int
	// Probe measures a cache-line round trip before and after.
	Probe bool
	// KeyFile is a UDP domain key file (hex, mode 0600): the udp
	// transport's datagrams are then authenticated (docs/security.md).
	KeyFile string
	// CompareAuth (udp only) measures udp with the domain key against udp
	// without, alternating rounds in one run, and reports their ratio
	// instead of the raw-udp one. Without KeyFile a random key is written
	// to a temporary 0600 file for the run.
	CompareAuth bool
	// Record, when set, is an MCAP file (created, never overwritten)
	// that gets every timed round trip, one channel per transport and
	// size (record.go). Not with Compare or CompareAuth.
	Record string
	// Launcher starts the other process; zero means this hilrig binary.
	Launcher Launcher
}

// Defaults fills zero fields with their defaults.
func (c *PingPongConfig) Defaults() {
	if !c.Pin {
		c.PingCPU, c.PongCPU = -1, -1
	}
	if c.Path == "" {
		c.Path = "copy"
	}
	if len(c.Sizes) == 0 {
		c.Sizes = []int{16}
	}
	if c.RoundTrips == 0 {
		c.RoundTrips = 20000
	}
	if c.Warmup == 0 {
		c.Warmup = 1000
	}
	if c.Rounds == 0 {
		c.Rounds = 4
	}
}

// Validate checks the configuration; errors wrap ErrUsage and name the flag.
func (c *PingPongConfig) Validate() error {
	ok := false
	for _, t := range Transports {
		ok = ok || t == c.Transport
	}
	if !ok {
		return fmt.Errorf("%w: --transport %q: want one of %v", ErrUsage, c.Transport, Transports)
	}
	if c.Record != "" && (c.Compare || c.CompareAuth) {
		return fmt.Errorf("%w: --record: not with --compare or --compare-auth (their rounds alternate two ends)", ErrUsage)
	}
	if err := checkWait(c.Wait); err != nil {
		return err
	}
	if c.Path != "copy" && c.Path != "loan" {
		return fmt.Errorf("%w: --path %q: want copy or loan", ErrUsage, c.Path)
	}
	for _, s := range c.Sizes {
		if s < 8 || s > 64<<20 {
			return fmt.Errorf("%w: --size %d: want 8 B .. 64 MiB", ErrUsage, s)
		}
	}
	if c.RoundTrips < 1 || c.Warmup < 0 {
		return fmt.Errorf("%w: --n %d / --warmup %d: want n >= 1, warmup >= 0", ErrUsage, c.RoundTrips, c.Warmup)
	}
	if c.Depth < 0 || c.Depth > 64 {
		return fmt.Errorf("%w: --depth %d: want 0..64", ErrUsage, c.Depth)
	}
	if c.Datagram != 0 && (c.Datagram < 16 || c.Datagram > 65507) {
		return fmt.Errorf("%w: --datagram %d: want 16..65507", ErrUsage, c.Datagram)
	}
	for _, cpu := range []int{c.PingCPU, c.PongCPU} {
		if cpu >= runtime.NumCPU() {
			return fmt.Errorf("%w: CPU %d: this machine has CPUs 0..%d", ErrUsage, cpu, runtime.NumCPU()-1)
		}
	}
	if c.NetNS && c.Transport != TUDP && c.Transport != TRawUDP {
		return fmt.Errorf("%w: --netns applies to udp and raw-udp only, not %s", ErrUsage, c.Transport)
	}
	if (c.KeyFile != "" || c.CompareAuth) && c.Transport != TUDP {
		return fmt.Errorf("%w: --key/--compare-auth apply to --transport udp only, not %s", ErrUsage, c.Transport)
	}
	if (c.Compare || c.CompareAuth) && c.Rounds < 1 {
		return fmt.Errorf("%w: --rounds %d: want >= 1", ErrUsage, c.Rounds)
	}
	return nil
}

// Baseline returns the baseline measured against transport t with wait
// strategy w in compare mode: shm spin ↔ raw-spin, shm futex/hybrid ↔
// raw-futex, udp ↔ raw-udp, intra spin ↔ raw-spin-intra, intra
// futex/hybrid ↔ chan. A baseline's own baseline is itself.
func Baseline(t string, w kind.Wait) string {
	switch t {
	case TShm:
		if w == kind.WaitSpin {
			return TRawSpin
		}
		return TRawFutex
	case TIntra:
		if w == kind.WaitSpin {
			return TRawSpinIntra
		}
		return TChan
	case TUDP:
		return TRawUDP
	}
	return t
}

// Result is one transport at one size.
type Result struct {
	Transport string `json:"transport"`
	Wait      string `json:"wait,omitempty"`
	Path      string `json:"path,omitempty"`
	Size      int    `json:"size"`
	NetNS     bool   `json:"netns,omitempty"`
	// Auth: udp with the domain key (--key, --compare-auth).
	Auth   bool        `json:"auth,omitempty"`
	RTT    Percentiles `json:"rtt"`
	OneWay Percentiles `json:"one_way"`
	// RoundP50 are the per-round RTT p50s in compare mode, ns.
	RoundP50 []int64 `json:"round_p50_ns,omitempty"`
	// Reliable and Depth are the middleware contracts' QoS (0: 1).
	Reliable bool `json:"reliable,omitempty"`
	Depth    int  `json:"depth,omitempty"`
	KeepLast bool `json:"keep_last,omitempty"`
	// Dedicated: UDPConfig.DedicatedReader on both subscribers.
	Dedicated bool `json:"dedicated,omitempty"`
	// GSO: raw-udp sent runs of datagrams per call and read them with
	// UDP_GRO (PingPongConfig.RawGSO, where it applies).
	GSO bool `json:"gso,omitempty"`
}

// Ratio compares a middleware transport with its baseline measured in the
// same run, alternating rounds.
type Ratio struct {
	Middleware string  `json:"middleware"`
	Baseline   string  `json:"baseline"`
	Size       int     `json:"size"`
	P50        float64 `json:"p50"` // middleware p50 / baseline p50 (round trip; same for one-way)
	P99        float64 `json:"p99"`
	// RoundP50Min/Max are the extremes of the per-round p50 ratios: how
	// much the ratio itself moved during the run.
	RoundP50Min float64 `json:"round_p50_min"`
	RoundP50Max float64 `json:"round_p50_max"`
}

// Probe is the cache-line round trip measured around a run (ns, p50).
type Probe struct {
	BeforeNs  int64 `json:"before_ns"`
	AfterNs   int64 `json:"after_ns"`
	Disturbed bool  `json:"disturbed"`
	// StallsBefore/After are the platform's stalls seen by the bare spin
	// before and after the run: no middleware, no syscall, so a stall is
	// the host or the kernel taking a vCPU away (docs/bench.md, "Where the
	// spin tail comes from").
	StallsBefore Stalls `json:"stalls_before"`
	StallsAfter  Stalls `json:"stalls_after"`
	// Reason says why the run is flagged.
	Reason string `json:"reason,omitempty"`
}

// Report is everything one pingpong invocation measured.
type Report struct {
	Command string   `json:"command"`
	CPUs    int      `json:"cpus"`
	PingCPU int      `json:"ping_cpu"`
	PongCPU int      `json:"pong_cpu"`
	N       int      `json:"round_trips"`
	Warmup  int      `json:"warmup"`
	Results []Result `json:"results"`
	Ratios  []Ratio  `json:"ratios,omitempty"`
	Probe   *Probe   `json:"probe,omitempty"`
	// ClockNs is the p50 cost of the clock reads inside every sample, ns.
	ClockNs int64 `json:"clock_overhead_ns"`
	// KernelTracing lists the kernel trace buffers that were recording
	// when the run started (kernelTracing); their cost is in the figures.
	KernelTracing []string `json:"kernel_tracing,omitempty"`
	Started       string   `json:"started"`
	Duration      string   `json:"duration"`
	// Recording is the MCAP file the round trips were written to
	// (--record), "" when none.
	Recording string `json:"recording,omitempty"`
}

func (c *PingPongConfig) end(t string, size int) endSpec {
	e := endSpec{transport: t, size: size, reliable: c.Reliable, netns: c.NetNS, dgram: datagram(c.Datagram, c.NetNS),
		pingCPU: c.PingCPU, pongCPU: c.PongCPU, launcher: c.Launcher, depth: c.Depth, keepLast: c.KeepLast, dedicated: c.Dedicated && t == TUDP,
		rawGSO: c.RawGSO && t == TRawUDP}
	if isMiddleware(t) {
		e.wait, e.path = c.Wait, c.Path
	}
	if t == TUDP {
		e.keyFile = c.KeyFile
	}
	return e
}

// datagram resolves raw-udp's datagram payload size (see
// PingPongConfig.Datagram).
func datagram(d int, netns bool) int {
	switch {
	case d != 0:
		return d
	case netns:
		return 1500 - 28
	}
	return 65535 - 28
}

// measure opens one session and times n round trips after warm round trips.
// The loop runs on a locked (optionally pinned) thread; it does not
// allocate.
func measure(ctx context.Context, e endSpec, n, warm int, h *hist) (err error) {
	s, err := openSession(ctx, e)
	if err != nil {
		return fmt.Errorf("%s %d B: %w", e.transport, e.size, err)
	}
	defer func() {
		if cerr := s.close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s %d B: close: %w", e.transport, e.size, cerr)
		}
	}()
	pin, err := sys.PinThread(e.pingCPU)
	if err != nil {
		return err
	}
	defer pin.Release()
	var seq uint64
	if err := timedLoop(s.ping, n, warm, h, &seq); err != nil {
		if ctx.Err() != nil { // interrupted by the caller, not a failure of the run
			return fmt.Errorf("%s %d B: %w", e.transport, e.size, context.Cause(ctx))
		}
		if s.peer != nil {
			// Give a failing peer a moment to exit so its own error is shown.
			select {
			case <-s.peer.exited:
				return fmt.Errorf("%s %d B: %w (pong exited: %v%s)", e.transport, e.size, err, s.peer.err, s.peer.stderr.suffix())
			case <-time.After(time.Second):
			}
		}
		return fmt.Errorf("%s %d B: %w", e.transport, e.size, err)
	}
	return nil
}

// timedLoop is the measured loop. seq is the last sequence number used on
// this session (every round trip needs a new one). 0 allocs (see
// TestTimedLoopAllocs).
func timedLoop(p pinger, n, warm int, h *hist, seq *uint64) error {
	for range warm {
		*seq++
		if err := p.roundTrip(*seq); err != nil {
			return err
		}
	}
	for range n {
		*seq++
		t0 := time.Now()
		err := p.roundTrip(*seq)
		d := time.Since(t0)
		if err != nil {
			return err
		}
		h.recordAt(t0, d)
	}
	return nil
}

// PingPong runs the configured ping-pong for every size (and, with
// Compare, its baseline in alternating rounds). Blocks until done or ctx
// is cancelled; every child process and shm file is gone when it returns.
func PingPong(ctx context.Context, c PingPongConfig) (*Report, error) {
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{CPUs: runtime.NumCPU(), PingCPU: c.PingCPU, PongCPU: c.PongCPU, N: c.RoundTrips, Warmup: c.Warmup,
		Started: start.UTC().Format(time.RFC3339), ClockNs: clockOverhead(), KernelTracing: kernelTracing()}
	var before int64
	var stallsBefore Stalls
	if c.Probe {
		var err error
		if before, stallsBefore, err = probe(ctx, c.PingCPU, c.PongCPU); err != nil {
			return nil, err
		}
	}
	if c.CompareAuth && c.KeyFile == "" {
		f, err := tempKeyFile()
		if err != nil {
			return nil, err
		}
		defer os.Remove(f)
		c.KeyFile = f
	}
	base := Baseline(c.Transport, c.Wait)
	var recorded []recordedRun
	for _, size := range c.Sizes {
		if c.CompareAuth {
			keyed := c.end(TUDP, size)
			plain := keyed
			plain.keyFile = ""
			mw, bl, ratio, err := c.compareEnds(ctx, keyed, plain, size)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, mw, bl)
			rep.Ratios = append(rep.Ratios, ratio)
			continue
		}
		if !c.Compare || base == c.Transport {
			h := newHist()
			if c.Record != "" {
				h.keep(c.RoundTrips)
				recorded = append(recorded, recordedRun{transport: c.Transport, size: size, h: h})
			}
			if err := measure(ctx, c.end(c.Transport, size), c.RoundTrips, c.Warmup, h); err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, c.result(c.Transport, size, h, nil))
			continue
		}
		mw, bl, ratio, err := c.compare(ctx, base, size)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, mw, bl)
		rep.Ratios = append(rep.Ratios, ratio)
	}
	if c.Probe {
		after, stallsAfter, err := probe(ctx, c.PingCPU, c.PongCPU)
		if err != nil {
			return nil, err
		}
		rep.Probe = judgeProbe(before, after)
		rep.Probe.StallsBefore, rep.Probe.StallsAfter = stallsBefore, stallsAfter
	}
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	if c.Record != "" {
		if err := c.writeRecording(recorded); err != nil {
			return rep, err
		}
		rep.Recording = c.Record
	}
	return rep, nil
}

func (c *PingPongConfig) result(t string, size int, h *hist, rounds []int64) Result {
	r := Result{Transport: t, Size: size, NetNS: c.NetNS && (t == TUDP || t == TRawUDP), RTT: h.percentiles(), RoundP50: rounds,
		Auth: t == TUDP && c.KeyFile != ""}
	if isMiddleware(t) {
		r.Wait, r.Path, r.Reliable, r.Depth = c.Wait.String(), c.Path, c.Reliable, max(c.Depth, 1)
		r.KeepLast = c.KeepLast && c.Reliable && t == TUDP
		r.Dedicated = c.Dedicated && t == TUDP
	}
	r.GSO = t == TRawUDP && c.RawGSO && datagram(c.Datagram, c.NetNS) <= 65507/2
	r.OneWay = r.RTT.half()
	return r
}

// compare alternates middleware and baseline sessions (A B, B A, ...) so
// slow drifts of the shared machine hit both alike.
func (c *PingPongConfig) compare(ctx context.Context, base string, size int) (Result, Result, Ratio, error) {
	return c.compareEnds(ctx, c.end(c.Transport, size), c.end(base, size), size)
}

// compareEnds alternates sessions of a (the middleware under test) and b
// (its baseline): A B, B A, ...
func (c *PingPongConfig) compareEnds(ctx context.Context, a, b endSpec, size int) (Result, Result, Ratio, error) {
	per := max(c.RoundTrips/c.Rounds, 1)
	warm := max(c.Warmup/c.Rounds, 100)
	hm, hb := newHist(), newHist()
	var rm, rb []int64
	for r := range c.Rounds {
		order := []bool{true, false}
		if r%2 == 1 {
			order[0], order[1] = false, true
		}
		for _, isA := range order {
			e := b
			if isA {
				e = a
			}
			h := newHist()
			if err := measure(ctx, e, per, warm, h); err != nil {
				return Result{}, Result{}, Ratio{}, err
			}
			p50 := h.percentiles().P50
			if isA {
				hm.merge(h)
				rm = append(rm, p50)
			} else {
				hb.merge(h)
				rb = append(rb, p50)
			}
		}
	}
	mw, bl := c.result(a.transport, size, hm, rm), c.result(b.transport, size, hb, rb)
	mw.Auth, bl.Auth = a.keyFile != "", b.keyFile != ""
	ratio := Ratio{Middleware: name(mw), Baseline: name(bl), Size: size,
		P50: float64(mw.RTT.P50) / float64(bl.RTT.P50), P99: float64(mw.RTT.P99) / float64(bl.RTT.P99)}
	for i := range rm {
		x := float64(rm[i]) / float64(rb[i])
		if i == 0 || x < ratio.RoundP50Min {
			ratio.RoundP50Min = x
		}
		if i == 0 || x > ratio.RoundP50Max {
			ratio.RoundP50Max = x
		}
	}
	return mw, bl, ratio, nil
}

// probeBatches × probeBatch round trips make the cache-line probe: a few
// ms. Each batch is timed as a whole so the clock read (~40-80 ns on
// kvm-clock) does not swamp a ~110 ns round trip.
const (
	probeBatches = 200
	probeBatch   = 50
)

// Stalls counts the bare spin's round trips of at least StallNs during a
// window of probeStallWindow.
type Stalls struct {
	// StallNs is the threshold, ns.
	StallNs int64 `json:"stall_ns"`
	// RoundTrips were timed one by one; Stalled of them took ≥ StallNs.
	RoundTrips int64 `json:"round_trips"`
	Stalled    int64 `json:"stalled"`
	// PerSecond is Stalled over the window's wall time.
	PerSecond float64 `json:"per_second"`
}

// Fraction is Stalled/RoundTrips (0 when nothing was timed). A spin
// transport's percentile above 1 − Fraction is the platform's, whatever
// the transport does.
func (s Stalls) Fraction() float64 {
	if s.RoundTrips == 0 {
		return 0
	}
	return float64(s.Stalled) / float64(s.RoundTrips)
}

// probeStallWindow and probeStallNs: the stall count's window and
// threshold. 10 µs is ~10 bare round trips, far above any cache effect;
// on the 2-vCPU VM of docs/bench.md the bare spin stalls ~60 µs about
// 1,400–2,900 times a second while the guest counts ~520 timer interrupts
// a second, so most of those stalls happen outside the guest.
const (
	probeStallWindow = 50 * time.Millisecond
	probeStallNs     = 10_000
)

// probe is the raw-spin round trip between two threads of this process
// (16 B), pinned like the run (CPUs 0 and 1 when the run floats). It reads
// ~110 ns when the two vCPUs share a cache and ~300 ns when the host
// placed them apart; it returns the p50 over batches, ns, and the stalls
// of one-by-one round trips over probeStallWindow.
func probe(ctx context.Context, pingCPU, pongCPU int) (int64, Stalls, error) {
	if pingCPU < 0 && pongCPU < 0 && runtime.NumCPU() >= 2 {
		pingCPU, pongCPU = 0, 1
	}
	st := Stalls{StallNs: probeStallNs}
	s, err := openSession(ctx, endSpec{transport: TRawSpinIntra, size: 16, pingCPU: pingCPU, pongCPU: pongCPU})
	if err != nil {
		return 0, st, fmt.Errorf("cache-line probe: %w", err)
	}
	defer s.close()
	pin, err := sys.PinThread(pingCPU)
	if err != nil {
		return 0, st, fmt.Errorf("cache-line probe: %w", err)
	}
	defer pin.Release()
	h := newHist()
	var seq uint64
	if err := timedLoop(s.ping, 0, 500, h, &seq); err != nil {
		return 0, st, fmt.Errorf("cache-line probe: %w", err)
	}
	for range probeBatches {
		t0 := time.Now()
		for range probeBatch {
			seq++
			if err := s.ping.roundTrip(seq); err != nil {
				return 0, st, fmt.Errorf("cache-line probe: %w", err)
			}
		}
		h.record(int64(time.Since(t0)) / probeBatch)
	}
	start := time.Now()
	for {
		t0 := time.Now()
		seq++
		if err := s.ping.roundTrip(seq); err != nil {
			return 0, st, fmt.Errorf("cache-line probe: %w", err)
		}
		t1 := time.Now()
		st.RoundTrips++
		if t1.Sub(t0) >= probeStallNs {
			st.Stalled++
		}
		if el := t1.Sub(start); el >= probeStallWindow {
			st.PerSecond = float64(st.Stalled) / el.Seconds()
			break
		}
	}
	return h.percentiles().P50, st, nil
}

// clockOverhead is the p50 cost of one time.Now/time.Since pair, ns: it is
// inside every recorded round trip (baseline and middleware alike).
func clockOverhead() int64 {
	h := newHist()
	for range 10000 {
		t0 := time.Now()
		h.record(int64(time.Since(t0)))
	}
	return h.percentiles().P50
}

// probeLimit: a probe beyond 1.5× its partner or beyond 200 ns flags the
// run: the two vCPUs moved (peers/README: ~110 ns near, ~300 ns far).
const (
	probeDrift   = 1.5
	probeFarNs   = 200
	probeMinimum = 1
)

func judgeProbe(before, after int64) *Probe {
	p := &Probe{BeforeNs: before, AfterNs: after}
	lo, hi := min(before, after), max(before, after)
	lo = max(lo, probeMinimum)
	switch {
	case float64(hi)/float64(lo) > probeDrift:
		p.Disturbed = true
		p.Reason = fmt.Sprintf("cache-line round trip moved from %d ns to %d ns during the run: vCPU placement changed", before, after)
	case hi > probeFarNs:
		p.Disturbed = true
		p.Reason = fmt.Sprintf("cache-line round trip %d/%d ns (> %d ns): the vCPUs are far apart or busy; figures are not comparable with a near placement", before, after, probeFarNs)
	}
	return p
}

// tempKeyFile writes a random 32-byte domain key (hex) to a new 0600 file
// for a --compare-auth run without --key; the caller removes it.
func tempKeyFile() (string, error) {
	var k [32]byte
	_, _ = rand.Read(k[:])
	f, err := os.CreateTemp("", "hilrig-bench-*.key") // created 0600
	if err != nil {
		return "", fmt.Errorf("--compare-auth: temporary key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(k[:]) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("--compare-auth: temporary key file: %w", err)
	}
	return f.Name(), nil
}
