package lxi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// Tek drives a Tektronix 4/5/6 Series MSO (MSO44/46, MSO54/56/58, MSO64)
// over its raw socket server (port configurable on the instrument, 4000 by
// custom) or VXI-11.
//
// Commands, from the "4, 5, and 6 Series MSO Programmer Manual" (Tektronix
// 077-1305-xx), Commands listed in alphabetical order; the syntax was
// cross-checked against the command lists Tektronix generates from that
// manual in tektronix/tm_devices (commands/*/measurement.py):
//   - HEADer OFF, VERBose ON (Miscellaneous group): the instrument starts
//     with long headers on ("MEASUREMENT:MEAS1:RESULTS:ALLACQS:MEAN 1.2E-6"),
//     which no number parser accepts, so headers are turned off first.
//   - MEASUrement:DELETEALL, MEASUrement:ADDMEAS DELAY, MEASUrement:LIST?
//     (Measurement group): start from a clean slate and learn the MEAS<x>
//     name the new measurement got.
//   - MEASUrement:MEAS<x>:SOUrce1 / SOUrce2: both are always set, because a
//     new DELAY measurement's second source defaults to its first.
//   - MEASUrement:MEAS<x>:DELay:EDGE1 / EDGE2 {RISe|FALL}.
//   - MEASUrement:MEAS<x>:GLOBalref OFF, MEASUrement:MEAS<x>:REFLevels<y>:METHod
//     ABSolute, ...:REFLevels<y>:ABSolute:RISEMid / FALLMid <NR3> (threshold).
//   - MEASUrement:MEAS<x>:POPUlation:LIMIT:STATE ON and
//     MEASUrement:MEAS<x>:POPUlation:LIMIT:VALue <NR1> (population limit;
//     these two were found in third-party code citing the manual, not in the
//     generated lists — verify on the instrument).
//   - MEASUrement:MEAS<x>:DISPlaystat:ENABle ON.
//   - MEASUrement:MEAS<x>:RESUlts:ALLAcqs:{MEAN|MINimum|MAXimum|STDDev|POPUlation}?
//     (statistics over all acquisitions since the last CLEAR).
//   - CLEAR (Miscellaneous group): clears acquisitions, measurements and
//     waveforms — resets the statistics.
//   - *ESR? and ALLEv? (Status and Error group): these instruments have no
//     SYSTem:ERRor?; a non-zero *ESR? means events are queued and ALLEv?
//     returns them as <code>,"<text>" pairs. Codes 100–399 (command,
//     execution, device errors) become [*scopes.InstrumentError]. The
//     queue is checked after every configuration command, so the error
//     names the command.
//   - HORizontal:SCAle? (Horizontal group): seconds per division, read
//     at ConfigureDelay; ten divisions are the span no delay can exceed
//     (a reading beyond it is refused, [scopes.ErrImplausible]).
//   - ACQuire:STATE? / ACQuire:STATE STOP / ACQuire:STATE RUN (Acquisition
//     group): ReadStats stops a running acquisition, reads the five
//     statistics and restarts it, so they come from the same acquisitions.
//
// Window: with a population limit the statistics cover the first N
// measurements after CLEAR (POPUlation:LIMIT; whether the instrument
// keeps the first or the last N is not stated in the command entries —
// verify on your firmware); without one the driver turns the limit off
// and they cover every acquisition since CLEAR.
//
// *IDN? must name TEKTRONIX and a 4/5/6 Series model before anything is
// configured ([scopes.ErrWrongInstrument] otherwise). "No measurement" is
// 9.91E37: a missing statistic, and [scopes.ErrNoResult] for the mean.
// All five statistics are reported. Not safe for concurrent use.
type Tek struct {
	base
	meas   string // "MEAS1"
	window scopes.Window
}

var tekFreeze = freezer{state: "ACQuire:STATE?", stop: "ACQuire:STATE STOP", run: "ACQuire:STATE RUN",
	stopped: func(r string) bool { return r == "0" || strings.EqualFold(r, "STOP") || strings.EqualFold(r, "OFF") }}

var _ Instrument = (*Tek)(nil)

// DialTek connects to a Tektronix 4/5/6 Series MSO and turns headers off.
// It blocks until connected.
func DialTek(ctx context.Context, o Options) (*Tek, error) {
	b, err := open(ctx, "tek", o, tekFamilies)
	if err != nil {
		return nil, err
	}
	t := &Tek{base: b}
	if err := t.writeAll(ctx, "HEADer OFF", "VERBose ON"); err != nil {
		b.c.Close()
		return nil, fmt.Errorf("tek %s: %w", b.c.Addr(), err)
	}
	return t, nil
}

// ConfigureDelay sets up MEAS<x> as a DELAY from cfg.Source to cfg.Dest and
// checks the event queue. It blocks on instrument I/O.
func (t *Tek) ConfigureDelay(ctx context.Context, cfg scopes.DelayConfig) error {
	t.cfg = nil // a failed reconfiguration leaves nothing half-set to read
	if err := cfg.Validate(); err != nil {
		return err
	}
	meas := ""
	// One step: a retried ADDMEAS needs the DELETEALL before it.
	err := retry(ctx, func() error {
		if err := t.configureOnce(ctx, t.events, "HEADer OFF", "MEASUrement:DELETEALL", "MEASUrement:ADDMEAS DELAY"); err != nil {
			return err
		}
		list, err := t.c.Query(ctx, "MEASUrement:LIST?")
		if err != nil {
			return err
		}
		for _, m := range strings.Split(list, ",") {
			m = strings.ToUpper(strings.Trim(strings.TrimSpace(m), `"`))
			if strings.HasPrefix(m, "MEAS") {
				meas = m
			}
		}
		if meas == "" {
			t.c.Invalidate()
			return fmt.Errorf("MEASUrement:LIST? = %q: %w: no measurement was added", list, scopes.ErrGarbage)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tek configure: %w", err)
	}
	p := "MEASUrement:" + meas
	cmds := []string{
		fmt.Sprintf("%s:SOUrce1 CH%d", p, cfg.Source),
		fmt.Sprintf("%s:SOUrce2 CH%d", p, cfg.Dest),
		fmt.Sprintf("%s:DELay:EDGE1 %s", p, tekEdge(cfg.SourceEdge)),
		fmt.Sprintf("%s:DELay:EDGE2 %s", p, tekEdge(cfg.DestEdge)),
	}
	if cfg.HasThreshold {
		cmds = append(cmds, p+":GLOBalref OFF")
		for _, r := range []string{"REFLevels1", "REFLevels2"} {
			cmds = append(cmds,
				fmt.Sprintf("%s:%s:METHod ABSolute", p, r),
				fmt.Sprintf("%s:%s:ABSolute:RISEMid %.6E", p, r, cfg.ThresholdV),
				fmt.Sprintf("%s:%s:ABSolute:FALLMid %.6E", p, r, cfg.ThresholdV))
		}
	}
	window := scopes.Window{Kind: scopes.WindowAll}
	if cfg.PopulationLimit > 0 {
		cmds = append(cmds, p+":POPUlation:LIMIT:STATE ON",
			fmt.Sprintf("%s:POPUlation:LIMIT:VALue %d", p, cfg.PopulationLimit))
		window = scopes.Window{Kind: scopes.WindowFirst, N: int64(cfg.PopulationLimit)}
	} else {
		cmds = append(cmds, p+":POPUlation:LIMIT:STATE OFF")
	}
	cmds = append(cmds, p+":DISPlaystat:ENABle ON")
	if err := t.configure(ctx, t.events, cmds...); err != nil {
		return fmt.Errorf("tek configure: %w", err)
	}
	// Ten horizontal divisions.
	if err := t.readSpan(ctx, "HORizontal:SCAle?", 10); err != nil {
		return fmt.Errorf("tek configure: %w", err)
	}
	t.meas, t.cfg, t.window = meas, &cfg, window
	return nil
}

func tekEdge(p scopes.Polarity) string {
	if p == scopes.Falling {
		return "FALL"
	}
	return "RISe"
}

// events reads *ESR? and, when non-zero, ALLEv?, returning queued errors.
func (t *Tek) events(ctx context.Context, after string) error {
	s, err := t.c.Query(ctx, "*ESR?")
	if err != nil {
		return err
	}
	esr, err := scpi.ParseNumber(s)
	if err != nil {
		t.c.Invalidate()
		return fmt.Errorf("*ESR?: %w", err)
	}
	if esr == 0 {
		return nil
	}
	s, err = t.c.Query(ctx, "ALLEv?")
	if err != nil {
		return err
	}
	evs, err := scpi.ParseEvents(s)
	if err != nil {
		t.c.Invalidate()
		return fmt.Errorf("ALLEv?: %w", err)
	}
	var errs []error
	for _, e := range evs {
		if e.Code >= 100 && e.Code < 400 {
			e.After = after
			errs = append(errs, &e)
		}
	}
	return errors.Join(errs...)
}

// ResetStats sends CLEAR. It blocks on instrument I/O.
func (t *Tek) ResetStats(ctx context.Context) error {
	return t.resetStats(ctx, "tek", "CLEAR")
}

// ReadStats reads the all-acquisitions statistics of the delay
// measurement with acquisition stopped (and restarted afterwards when it
// was running). No result wraps [scopes.ErrNoResult].
func (t *Tek) ReadStats(ctx context.Context) (scopes.Stats, error) {
	if t.cfg == nil {
		return scopes.Stats{}, scopes.ErrNotConfigured
	}
	return t.frozenStats(ctx, "tek", tekFreeze, t.window, "MEASUrement:"+t.meas+":RESUlts:ALLAcqs:",
		[5]string{"MEAN?", "MINimum?", "MAXimum?", "STDDev?", "POPUlation?"})
}
