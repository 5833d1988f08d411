package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/gpiocap"
	"github.com/hilrig/hilrig/scopes/lxi"
)

// ErrNoCapture: the rack offers no GPIO lines a capture can watch for the
// route (no gpio-capture scope, and the markers are not on a simulated
// chip that can be probed).
var ErrNoCapture = errors.New("steps: no capture lines for this route")

// Scope is the rack's oscilloscope opened for a suite. On the sim rack
// (driver "sim") it is the SCPI simulator the rig started on loopback
// (rig; each channel fed by the simulated GPIO line the rack
// wires to it), reached over a real TCP socket through the Tektronix
// driver, like a lab scope. One goroutine owns a Scope.
type Scope struct {
	Instrument lxi.Instrument
	Identity   scopes.Identity
	// Driver is the lxi driver in use; Addr the SCPI address.
	Driver, Addr string
	// Sim is true for the rig's scope simulator.
	Sim bool
	// Capture is set when the "scope" is a gpio-capture (then it is also
	// Instrument): its Pairing accounts for unpaired edges.
	Capture *gpiocap.Capture
	rack    *fixtures.Rack
}

// OpenScope connects to the rack's scope at the rig's scope address. The
// caller registers DeferCleanup(s.Close) right after. Blocks.
func OpenScope(ctx context.Context, env *Env) (*Scope, error) {
	rack := env.Rack
	sc := rack.Instruments.Scope
	if sc == nil {
		return nil, fmt.Errorf("rack %s claims a scope but has no instruments.scope", rack.Name)
	}
	s := &Scope{rack: rack, Addr: env.Rig.ScopeAddr()}
	switch sc.Driver {
	case fixtures.ScopeGPIOCapture:
		chans := map[int]gpio.LineSpec{}
		for _, w := range sc.Wiring {
			l, err := rack.CaptureLine(w)
			if err != nil {
				return nil, fmt.Errorf("gpio-capture scope channel %d: %w", w.Channel, err)
			}
			chans[w.Channel] = env.Rig.LineSpec(l)
		}
		return openCapture(ctx, s, chans, "gpio-capture of rack "+rack.Name)
	case fixtures.ScopeSim:
		s.Driver, s.Sim = "tek", true // scopesim's default dialect
	default:
		// "scpi": find the vendor from *IDN? (every SCPI scope answers it
		// the same way), then use its driver.
		// (Driver keysight only picks 5025 when the address has no port.)
		id, err := lxi.Probe(ctx, lxi.Options{Driver: "keysight", Addr: s.Addr})
		if err != nil {
			return nil, fmt.Errorf("scope at %s: *IDN?: %w", s.Addr, err)
		}
		if s.Driver, _, err = lxi.DriverFor(id); err != nil {
			return nil, fmt.Errorf("scope at %s: %w", s.Addr, err)
		}
	}
	inst, err := lxi.Open(ctx, lxi.Options{Driver: s.Driver, Addr: s.Addr})
	if err != nil {
		return nil, fmt.Errorf("scope at %s: %w", s.Addr, err)
	}
	s.Instrument = inst
	if s.Identity, err = inst.Identify(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("scope at %s: *IDN?: %w", s.Addr, err)
	}
	return s, nil
}

// OpenProbeCapture opens a gpio-capture (scopes/gpiocap) on from's tx and
// to's rx marker lines — CH1 and CH2 — when both are on a simulated chip,
// whose watch is a passive probe (the sim rack: a third "board" watching
// the markers the agents drive, in the controller process). A rack with
// real marker lines needs a capture board wired in its fixture (scope
// driver gpio-capture) instead; then, and when a marker is missing, it
// returns ErrNoCapture. The caller registers DeferCleanup(s.Close).
func OpenProbeCapture(ctx context.Context, env *Env, from, to string) (*Scope, error) {
	chans := map[int]gpio.LineSpec{}
	for ch, bm := range map[int][2]string{1: {from, "tx"}, 2: {to, "rx"}} {
		b, err := env.Rack.Board(bm[0])
		if err != nil {
			return nil, err
		}
		l, ok := b.Marker(bm[1])
		if !ok {
			return nil, fmt.Errorf("%w: board %s has no %s marker", ErrNoCapture, bm[0], bm[1])
		}
		if !l.Chip.IsSim() {
			return nil, fmt.Errorf("%w: %s/%s is on chip %s, not a simulated chip (wire a capture board: scope driver gpio-capture)", ErrNoCapture, bm[0], bm[1], l.Chip)
		}
		chans[ch] = env.Rig.LineSpec(*l)
	}
	return openCapture(ctx, &Scope{rack: env.Rack}, chans, "probe of the simulated marker lines")
}

// captureWindow is the pairing window of the suites' captures: above any
// latency a rack bounds (the sim rack's max is 1 s), so a late message is
// still paired with its own sender edge even when later messages were
// marked meanwhile. A window below the marking interval would instead drop
// exactly the tail the comparison is about. The cost: a lost edge is not
// resynchronised by timing, so it shows as a resync and unmatched edges in
// the Pairing, which the suite requires to be clean.
const captureWindow = time.Second

// openCapture opens the capture (both edges: markers toggle, one edge per
// message).
func openCapture(ctx context.Context, s *Scope, chans map[int]gpio.LineSpec, what string) (*Scope, error) {
	c, err := gpiocap.Open(ctx, gpiocap.Config{Channels: chans, MaxDelay: captureWindow, BothEdges: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s.Instrument, s.Capture, s.Driver, s.Addr = c, c, "gpio-capture", what
	if s.Identity, err = c.Identify(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// Close disconnects from the scope (the rig stops its simulator).
func (s *Scope) Close() error {
	if s.Instrument == nil {
		return nil
	}
	return s.Instrument.Close()
}

// Channels returns the scope channels wired to from's "tx" and to's "rx"
// markers, and the threshold of the source channel (0 when unset).
func (s *Scope) Channels(from, to string) (src, dst int, threshold float64, err error) {
	if s.Capture != nil && (s.rack.Instruments.Scope == nil || s.rack.Instruments.Scope.Driver != fixtures.ScopeGPIOCapture) {
		return 1, 2, 0, nil // OpenProbeCapture: CH1 = from/tx, CH2 = to/rx
	}
	for _, w := range s.rack.Instruments.Scope.Wiring {
		if w.Board == from && w.Marker == "tx" {
			src, threshold = w.Channel, w.ThresholdV
		}
		if w.Board == to && w.Marker == "rx" {
			dst = w.Channel
		}
	}
	if src == 0 || dst == 0 {
		return 0, 0, 0, fmt.Errorf("rack %s wires no scope channel to %s/tx and %s/rx", s.rack.Name, from, to)
	}
	return src, dst, threshold, nil
}

// Arm configures the edge-to-edge delay from channel src to dst (rising
// to rising: markers toggle, so every other message makes a rising edge on
// both) and resets the statistics. Blocks on instrument I/O.
func (s *Scope) Arm(ctx context.Context, src, dst int, threshold float64) error {
	cfg := scopes.DelayConfig{Source: src, Dest: dst, SourceEdge: scopes.Rising, DestEdge: scopes.Rising,
		ThresholdV: threshold, HasThreshold: threshold != 0}
	if err := s.Instrument.ConfigureDelay(ctx, cfg); err != nil {
		return err
	}
	return s.Instrument.ResetStats(ctx)
}

// Settle reads the statistics until the count stops growing (edges still
// in flight from the last messages are in) or ctx ends; it returns the
// last read. A read the driver refused ([scopes.ErrImplausible]), or
// statistics reset between two reads ([scopes.ErrStatsReset], seen by a
// [scopes.ResetWatch]), end it with that error and no figure. Blocks on
// instrument I/O.
func (s *Scope) Settle(ctx context.Context, want int64) (scopes.Stats, error) {
	var last scopes.Stats
	var watch scopes.ResetWatch // the flow has ended: the count need not keep pace with time
	stable := 0
	for {
		st, err := s.Instrument.ReadStats(ctx)
		if err != nil && !errors.Is(err, scopes.ErrNoResult) {
			return scopes.Stats{}, err
		}
		if werr := watch.Observe(st); werr != nil {
			return scopes.Stats{}, werr
		}
		// No result yet may still turn into one while edges come in; if it
		// stays, it is returned and fails the case with its reason.
		if st.Count.OK && last.Count.OK && st.Count.N == last.Count.N {
			stable++
		} else {
			stable = 0
		}
		last = st
		if stable >= 2 || st.Count.OK && st.Count.N >= want {
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, err // the caller's deadline: report what the scope has
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Reading settles the scope's statistics for c (see [Scope.Settle]) and
// puts them into c as [Scope.Compare] does. A reading that cannot be
// taken — refused as implausible, statistics reset by someone else, or no
// result at all — sets c.Failure to the reason and c.Scope to a
// comparison carrying only that reason, never a number, so the case is
// recorded and fails saying why. A count below 90 % of want (the rising
// edges the messages made) is a note. Other errors (the instrument
// unreachable) are returned. Blocks on instrument I/O.
func (s *Scope) Reading(ctx context.Context, c *report.Case, src, dst int, want int64) (scopes.Stats, error) {
	st, err := s.Settle(ctx, want)
	switch {
	case errors.Is(err, scopes.ErrImplausible), errors.Is(err, scopes.ErrStatsReset), errors.Is(err, scopes.ErrNoResult):
		c.Scope = s.Compare(scopes.Stats{}, src, dst)
		c.Scope.Note = "scope reading refused: " + err.Error()
		c.Failure = c.Scope.Note
		return scopes.Stats{}, nil
	case err != nil:
		return st, err
	}
	c.Scope = s.Compare(st, src, dst)
	if st.Count.OK && st.Count.N*10 < want*9 {
		c.Add(report.Noted("steps.Reading", fmt.Sprintf("scope count %d is below the %d rising edges the messages made: acquisitions were missed or the statistics were cleared before the first read", st.Count.N, want)))
	}
	return st, nil
}

// Compare builds the report's scope comparison from the scope's statistics
// (seconds) for channels src→dst.
func (s *Scope) Compare(st scopes.Stats, src, dst int) *report.ScopeComparison {
	ns := func(v scopes.Value) *float64 {
		if !v.OK {
			return nil
		}
		return report.F(v.V * 1e9)
	}
	sc := &report.ScopeComparison{Instrument: s.Identity.Raw, Channels: fmt.Sprintf("CH%d→CH%d rising", src, dst),
		Scope: report.ScopeStats{MeanNs: ns(st.Mean), MinNs: ns(st.Min), MaxNs: ns(st.Max), StdDevNs: ns(st.StdDev)}}
	if st.Count.OK {
		n := st.Count.N
		sc.Scope.Count = &n
	}
	if s.Sim {
		sc.Instrument += " (scopesim on " + s.Addr + ", fed by the simulated GPIO chip)"
	}
	if s.Capture != nil {
		sc.Channels = fmt.Sprintf("CH%d→CH%d both edges", src, dst)
		sc.Note = "gpio-capture pairing: " + s.Capture.Pairing().String()
	}
	sc.Channels += " (" + st.Coverage() + ")" // what the scope's figures cover
	return sc
}

// SettleCapture waits until the capture holds want edges or their number
// has not grown for half a second (edges of the last messages are in), or
// ctx ends. Blocks; polls every 50 ms.
func (s *Scope) SettleCapture(ctx context.Context, want int) {
	last, since := -1, time.Now()
	for {
		n := s.Capture.Captured()
		if n >= want {
			return
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 500*time.Millisecond {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// maxExpand bounds the software samples rebuilt from a histogram.
const maxExpand = 1 << 22

// distribution fetches the scope's per-message delays and compares them
// with the software samples of h at tolerance tol. skip says why no
// comparison was made (d nil). Blocks on instrument I/O.
func (s *Scope) distribution(ctx context.Context, h *report.Histogram, tol time.Duration) (d *scopes.DistributionCheck, skip string, err error) {
	f, ok := s.Instrument.(scopes.DelayFetcher)
	if !ok {
		return nil, fmt.Sprintf("distribution not compared: the %s driver cannot fetch per-message delays", s.Driver), nil
	}
	if h == nil || h.Count() == 0 {
		return nil, "distribution not compared: no software latency samples", nil
	}
	if n := h.Count(); n > maxExpand {
		return nil, fmt.Sprintf("distribution not compared: %d software samples exceed the %d this comparison rebuilds", n, maxExpand), nil
	}
	wire, err := f.FetchDelays(ctx, nil)
	if err != nil {
		return nil, "", fmt.Errorf("fetch per-message delays: %w", err)
	}
	sw := make([]float64, 0, h.Count())
	for _, b := range h.Buckets() {
		mid := float64(b.FromNs+b.ToNs) / 2 * 1e-9
		for range b.Count {
			sw = append(sw, mid)
		}
	}
	cmp := scopes.CompareDistributions(wire, sw, scopes.Tolerance{AbsS: tol.Seconds()})
	return &cmp, "", nil
}
