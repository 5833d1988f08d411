package lxi

import (
	"context"
	"fmt"
	"strings"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// Siglent drives a Siglent SDS2000X Plus over its raw socket (5025) or
// VXI-11.
//
// Commands, from the "SDS2000X Plus Programming Guide" (Siglent, PG02-E…),
// chapter "MEASure Commands", advanced mode. The guide itself was not found
// in the search corpus; the syntax and reply formats below are taken from
// third-party drivers and recorded instrument replies that cite it, and
// should be checked against the guide before trusting a new firmware:
//   - :MEASure ON, :MEASure:MODE ADVanced.
//   - :MEASure:ADVanced:P1 ON, :MEASure:ADVanced:P1:TYPE {FRR|FRF|FFR|FFF}
//     (first rising/falling edge of source 1 to first rising/falling edge
//     of source 2).
//   - :MEASure:ADVanced:P1:SOURce1 C<n>, :MEASure:ADVanced:P1:SOURce2 C<n>
//     (both always set).
//   - :MEASure:ADVanced:STATistics ON,
//     :MEASure:ADVanced:STATistics:MAXCount <n> (population limit).
//   - :MEASure:ADVanced:P1:STATistics? {MEAN|MINimum|MAXimum|STDev|COUNt}.
//   - :MEASure:ADVanced:STATistics:RESet.
//   - *ESR? (IEEE 488.2): no error text is available over this path, so a
//     set command-error bit (32) or execution-error bit (16) becomes an
//     [*scopes.InstrumentError] whose text names the bit; it is read after
//     every configuration command, so the error names the command.
//   - :MEASure:ADVanced:STATistics:MAXCount? — read back when no
//     population limit is given: the statistics cover the last MAXCount
//     measurements (reported as a rolling window); 0 is unlimited
//     (every measurement since the reset), not "the last 0".
//   - :TIMebase:SCALe? — seconds per division, read at ConfigureDelay;
//     ten divisions are the span no delay can exceed (a reading beyond
//     it is refused, [scopes.ErrImplausible]).
//   - :TRIGger:STATus? (Arm, Ready, Auto, Trig'd, Stop, Roll),
//     :TRIGger:STOP, :TRIGger:RUN: ReadStats stops a running acquisition
//     while it reads the statistics one query at a time and restarts it.
//
// *IDN? must name Siglent Technologies and an SDS2000X Plus model before
// anything is configured ([scopes.ErrWrongInstrument] otherwise). "No
// measurement" is "****" (or "OFF"): a missing statistic, and
// [scopes.ErrNoResult] for the mean. Absolute thresholds are not
// supported by this driver ([scopes.ErrNotSupported]). Not safe for
// concurrent use.
type Siglent struct {
	base
	window scopes.Window
}

var siglentFreeze = freezer{state: ":TRIGger:STATus?", stop: ":TRIGger:STOP", run: ":TRIGger:RUN",
	stopped: func(r string) bool { return strings.EqualFold(r, "Stop") }}

var _ Instrument = (*Siglent)(nil)

// DialSiglent connects to an SDS2000X Plus. It blocks until connected.
func DialSiglent(ctx context.Context, o Options) (*Siglent, error) {
	b, err := open(ctx, "siglent", o, siglentFamilies)
	if err != nil {
		return nil, err
	}
	return &Siglent{base: b}, nil
}

// ConfigureDelay sets up advanced measurement P1 and checks *ESR?.
func (s *Siglent) ConfigureDelay(ctx context.Context, cfg scopes.DelayConfig) error {
	s.cfg = nil // a failed reconfiguration leaves nothing half-set to read
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.HasThreshold {
		return fmt.Errorf("siglent configure: absolute threshold: %w", scopes.ErrNotSupported)
	}
	e := map[scopes.Polarity]string{scopes.Rising: "R", scopes.Falling: "F"}
	cmds := []string{"*CLS", ":MEASure ON", ":MEASure:MODE ADVanced", ":MEASure:ADVanced:P1 ON",
		":MEASure:ADVanced:P1:TYPE F" + e[cfg.SourceEdge] + e[cfg.DestEdge],
		fmt.Sprintf(":MEASure:ADVanced:P1:SOURce1 C%d", cfg.Source),
		fmt.Sprintf(":MEASure:ADVanced:P1:SOURce2 C%d", cfg.Dest),
		":MEASure:ADVanced:STATistics ON"}
	if cfg.PopulationLimit > 0 {
		cmds = append(cmds, fmt.Sprintf(":MEASure:ADVanced:STATistics:MAXCount %d", cfg.PopulationLimit))
	}
	if err := s.configure(ctx, s.esr, cmds...); err != nil {
		return fmt.Errorf("siglent configure: %w", err)
	}
	// Ten horizontal divisions.
	if err := s.readSpan(ctx, ":TIMebase:SCALe?", 10); err != nil {
		return fmt.Errorf("siglent configure: %w", err)
	}
	window := scopes.Window{Kind: scopes.WindowLast, N: int64(cfg.PopulationLimit)}
	if cfg.PopulationLimit == 0 {
		err := retry(ctx, func() error {
			r, err := s.c.Query(ctx, ":MEASure:ADVanced:STATistics:MAXCount?")
			if err != nil {
				return err
			}
			n, err := scpi.ParseCount(r)
			if err != nil || !n.OK {
				s.c.Invalidate()
				return fmt.Errorf(":MEASure:ADVanced:STATistics:MAXCount? = %q: %w", r, scopes.ErrGarbage)
			}
			window.N = n.N
			if n.N == 0 {
				// 0 is unlimited: every measurement since the reset.
				window = scopes.Window{Kind: scopes.WindowAll}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("siglent configure: %w", err)
		}
	}
	s.cfg, s.window = &cfg, window
	return nil
}

// esr reads *ESR? and turns its command-error (32) and execution-error
// (16) bits into an [*scopes.InstrumentError] naming after.
func (s *Siglent) esr(ctx context.Context, after string) error {
	r, err := s.c.Query(ctx, "*ESR?")
	if err != nil {
		return err
	}
	esr, err := scpi.ParseNumber(r)
	if err != nil {
		s.c.Invalidate()
		return fmt.Errorf("*ESR?: %w", err)
	}
	switch v := int(esr); {
	case v&32 != 0:
		return &scopes.InstrumentError{Code: 32, Text: "command error (*ESR? bit 5)", After: after}
	case v&16 != 0:
		return &scopes.InstrumentError{Code: 16, Text: "execution error (*ESR? bit 4)", After: after}
	}
	return nil
}

// ResetStats sends :MEASure:ADVanced:STATistics:RESet.
func (s *Siglent) ResetStats(ctx context.Context) error {
	return s.resetStats(ctx, "siglent", ":MEASure:ADVanced:STATistics:RESet")
}

// ReadStats queries each statistic of P1 with acquisition stopped
// (restarted afterwards when it was running). No result wraps
// [scopes.ErrNoResult].
func (s *Siglent) ReadStats(ctx context.Context) (scopes.Stats, error) {
	if s.cfg == nil {
		return scopes.Stats{}, scopes.ErrNotConfigured
	}
	return s.frozenStats(ctx, "siglent", siglentFreeze, s.window, ":MEASure:ADVanced:P1:STATistics? ",
		[5]string{"MEAN", "MINimum", "MAXimum", "STDev", "COUNt"})
}
