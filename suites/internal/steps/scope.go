package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
)

// Scope is the rack's oscilloscope opened for a suite. On the sim rack
// (driver "sim") it is the SCPI simulator the rig started on loopback
// (fixtures/rig; each channel fed by the simulated GPIO line the rack
// wires to it), reached over a real TCP socket through the Tektronix
// driver, like a lab scope. One goroutine owns a Scope.
type Scope struct {
	Instrument lxi.Instrument
	Identity   scopes.Identity
	// Driver is the lxi driver in use; Addr the SCPI address.
	Driver, Addr string
	// Sim is true for the rig's scope simulator.
	Sim  bool
	rack *fixtures.Rack
}

// OpenScope connects to the rack's scope at the rig's scope address. The
// caller registers DeferCleanup(s.Close) right after. Blocks.
func OpenScope(ctx context.Context, rc *RigContext) (*Scope, error) {
	rack := rc.Rack
	sc := rack.Instruments.Scope
	if sc == nil {
		return nil, fmt.Errorf("rack %s claims a scope but has no instruments.scope", rack.Name)
	}
	s := &Scope{rack: rack, Addr: rc.Rig.ScopeAddr()}
	switch sc.Driver {
	case "sim":
		s.Driver, s.Sim = "tek", true // scopesim's default dialect
	default:
		// "scpi": find the vendor from *IDN? (every SCPI scope answers it
		// the same way), then use its driver.
		probe, err := lxi.Open(ctx, lxi.Options{Driver: "keysight", Addr: s.Addr})
		if err != nil {
			return nil, fmt.Errorf("scope at %s: %w", s.Addr, err)
		}
		id, err := probe.Identify(ctx)
		probe.Close()
		if err != nil {
			return nil, fmt.Errorf("scope at %s: *IDN?: %w", s.Addr, err)
		}
		s.Driver = vendorDriver(id.Vendor)
		if s.Driver == "" {
			return nil, fmt.Errorf("scope at %s identifies as %q: no driver for vendor %q (tek, keysight, rigol, siglent)", s.Addr, id.Raw, id.Vendor)
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

func vendorDriver(v string) string {
	v = strings.ToLower(v)
	switch {
	case strings.Contains(v, "tektronix"):
		return "tek"
	case strings.Contains(v, "keysight"), strings.Contains(v, "agilent"):
		return "keysight"
	case strings.Contains(v, "rigol"):
		return "rigol"
	case strings.Contains(v, "siglent"):
		return "siglent"
	}
	return ""
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
// last read. Blocks on instrument I/O.
func (s *Scope) Settle(ctx context.Context, want int64) (scopes.Stats, error) {
	var last scopes.Stats
	stable := 0
	for {
		st, err := s.Instrument.ReadStats(ctx)
		if err != nil {
			return last, err
		}
		if st.Count.OK && last.Count.OK && st.Count.N == last.Count.N {
			stable++
		} else {
			stable = 0
		}
		last = st
		if stable >= 2 || st.Count.OK && st.Count.N >= want {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, nil // the caller's deadline: report what the scope has
		case <-time.After(100 * time.Millisecond):
		}
	}
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
	return sc
}
