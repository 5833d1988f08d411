package lxi

import (
	"context"
	"fmt"
	"strings"

	"github.com/hilrig/hilrig/scopes"
)

// Rigol drives a Rigol DS1000Z, MSO5000 or DHO800/DHO900 over its raw
// socket (5555) or VXI-11. The family — and with it the command table —
// is chosen from the *IDN? model; any other answer is
// [scopes.ErrWrongInstrument] before anything is configured.
//
// Command tables, each from the family's programming guide, chapter
// ":MEASure Commands" (see rigolTables):
//   - DS1000Z: "DS1000Z Series Digital Oscilloscope Programming Guide"
//     (RIGOL, PGA19110-1110, May 2019). Items RDELay (rising→rising) and
//     FDELay (falling→falling) only; :MEASure:STATistic:MODE EXTRemum
//     exists here (and only here); no CNT statistic and no statistics
//     count, so the count is missing and the window unknown.
//   - MSO5000: "MSO5000 Series Digital Oscilloscope Programming Guide".
//     Not in the search corpus: items, CNT and COUNt follow third-party
//     code and recorded replies citing it; it has no
//     :MEASure:STATistic:MODE (answered -113 Undefined header).
//   - DHO800/DHO900: "DHO800/DHO900 Series Digital Oscilloscope
//     Programming Guide" (RIGOL, Apr. 2025), §3.17.5–3.17.8, checked
//     against the guide's text: items RRDelay, RFDelay, FRDelay, FFDelay;
//     :MEASure:STATistic:ITEM? {MAXimum|MINimum|CURRent|AVERages|DEViation|CNT};
//     :MEASure:STATistic:COUNt 2..100000 (default 1000); no
//     :MEASure:STATistic:MODE.
//
// Shared by all three: :TIMebase[:MAIN]:SCALe? (seconds per division,
// read at ConfigureDelay; 12 horizontal divisions on a DS1000Z, 10 on the
// others — a reading beyond that span is refused,
// [scopes.ErrImplausible]), :MEASure:SETup:DSA/DSB CHANnel<n> (delay sources,
// both always set), :MEASure:STATistic:DISPlay ON, :MEASure:STATistic:ITEM
// <item>,CHANnel<a>,CHANnel<b>, :MEASure:STATistic:RESet,
// :SYSTem:ERRor[:NEXT]? (checked after every configuration command, so an
// error names the command), and :TRIGger:STATus? (TD, WAIT, RUN, AUTO or
// STOP) with :STOP / :RUN, which ReadStats uses to stop a running
// acquisition while it reads the statistics one query at a time and to
// restart it afterwards.
//
// Window: MSO5000 and DHO keep a rolling window of the last COUNt
// measurements (default 1000). The driver sets COUNt to the population
// limit when one is given, else to the maximum (100000), and reports
// "last N acquisitions". Absolute thresholds (the guides' :MEASure:SETup
// MAX/MID/MIN are percentages) are not supported: [scopes.ErrNotSupported].
// "No measurement" is 9.9E37 (stated in the DS1000Z guide; assumed for the
// others): a missing statistic, and [scopes.ErrNoResult] for the mean.
// Not safe for concurrent use.
type Rigol struct {
	base
	tab    *rigolTable
	item   string
	window scopes.Window
}

// rigolTable is one family's command set.
type rigolTable struct {
	fam family
	// item names the delay item for the edge pair ("" when unavailable).
	item func(src, dst scopes.Polarity) string
	// mode is sent after enabling statistics (DS1000Z only).
	mode string
	// count: CNT statistic and :MEASure:STATistic:COUNt exist, within
	// [countMin, countMax].
	count              bool
	countMin, countMax int
	// divisions is the screen's horizontal divisions (the span no delay
	// can exceed is :TIMebase:MAIN:SCALe? times this).
	divisions float64
}

var rigolTables = []*rigolTable{
	{fam: rigolDS1000Z, mode: ":MEASure:STATistic:MODE EXTRemum", divisions: 12,
		item: func(src, dst scopes.Polarity) string {
			switch {
			case src == scopes.Rising && dst == scopes.Rising:
				return "RDELay"
			case src == scopes.Falling && dst == scopes.Falling:
				return "FDELay"
			}
			return ""
		}},
	{fam: rigolMSO5000, item: rigolEdgeItem, count: true, countMin: 2, countMax: 100000, divisions: 10},
	{fam: rigolDHO, item: rigolEdgeItem, count: true, countMin: 2, countMax: 100000, divisions: 10},
}

// rigolEdgeItem is the MSO5000/DHO item: source A edge, source B edge.
func rigolEdgeItem(src, dst scopes.Polarity) string {
	e := map[scopes.Polarity]string{scopes.Rising: "R", scopes.Falling: "F"}
	return e[src] + e[dst] + "Delay"
}

var rigolFreeze = freezer{state: ":TRIGger:STATus?", stop: ":STOP", run: ":RUN",
	stopped: func(r string) bool { return strings.EqualFold(r, "STOP") }}

var _ Instrument = (*Rigol)(nil)

// DialRigol connects to a Rigol scope and checks its *IDN? family. It
// blocks until connected.
func DialRigol(ctx context.Context, o Options) (*Rigol, error) {
	b, err := open(ctx, "rigol", o, rigolFamilies)
	if err != nil {
		return nil, err
	}
	r := &Rigol{base: b}
	for _, t := range rigolTables {
		if t.fam.name == b.fam.name {
			r.tab = t
		}
	}
	return r, nil
}

// Family names the model family the driver recognised from *IDN?.
func (r *Rigol) Family() string { return r.tab.fam.name }

// ConfigureDelay enables statistics for the delay item, checking
// :SYSTem:ERRor? after each command.
func (r *Rigol) ConfigureDelay(ctx context.Context, cfg scopes.DelayConfig) error {
	r.cfg = nil // a failed reconfiguration leaves nothing half-set to read
	if err := cfg.Validate(); err != nil {
		return err
	}
	t := r.tab
	if cfg.HasThreshold {
		return fmt.Errorf("rigol configure: absolute threshold: %w", scopes.ErrNotSupported)
	}
	item := t.item(cfg.SourceEdge, cfg.DestEdge)
	if item == "" {
		return fmt.Errorf("rigol configure: %s measures rising→rising or falling→falling only, not %v→%v: %w",
			t.fam.name, cfg.SourceEdge, cfg.DestEdge, scopes.ErrNotSupported)
	}
	window := scopes.Window{Kind: scopes.WindowUnknown}
	var countCmd string
	switch {
	case t.count && cfg.PopulationLimit > 0:
		if cfg.PopulationLimit < t.countMin || cfg.PopulationLimit > t.countMax {
			return fmt.Errorf("%w: rigol %s :MEASure:STATistic:COUNt takes %d..%d, not PopulationLimit %d",
				scopes.ErrBadConfig, t.fam.name, t.countMin, t.countMax, cfg.PopulationLimit)
		}
		countCmd = fmt.Sprintf(":MEASure:STATistic:COUNt %d", cfg.PopulationLimit)
		window = scopes.Window{Kind: scopes.WindowLast, N: int64(cfg.PopulationLimit)}
	case t.count:
		// The default rolling window (1000) would hide itself behind a
		// count that stops growing: widen it to the maximum.
		countCmd = fmt.Sprintf(":MEASure:STATistic:COUNt %d", t.countMax)
		window = scopes.Window{Kind: scopes.WindowLast, N: int64(t.countMax)}
	case cfg.PopulationLimit > 0:
		return fmt.Errorf("rigol configure: %s has no statistics count limit: %w", t.fam.name, scopes.ErrNotSupported)
	}
	src := fmt.Sprintf("CHANnel%d,CHANnel%d", cfg.Source, cfg.Dest)
	cmds := []string{"*CLS",
		fmt.Sprintf(":MEASure:SETup:DSA CHANnel%d", cfg.Source),
		fmt.Sprintf(":MEASure:SETup:DSB CHANnel%d", cfg.Dest),
		":MEASure:STATistic:DISPlay ON"}
	if t.mode != "" {
		cmds = append(cmds, t.mode)
	}
	cmds = append(cmds, fmt.Sprintf(":MEASure:STATistic:ITEM %s,%s", item, src))
	if countCmd != "" {
		cmds = append(cmds, countCmd)
	}
	if err := r.configure(ctx, r.systemErrors, cmds...); err != nil {
		return fmt.Errorf("rigol configure: %w", err)
	}
	if err := r.readSpan(ctx, ":TIMebase:MAIN:SCALe?", t.divisions); err != nil {
		return fmt.Errorf("rigol configure: %w", err)
	}
	r.item, r.cfg, r.window = item+","+src, &cfg, window
	return nil
}

// ResetStats sends :MEASure:STATistic:RESet.
func (r *Rigol) ResetStats(ctx context.Context) error {
	return r.resetStats(ctx, "rigol", ":MEASure:STATistic:RESet")
}

// ReadStats queries each statistic of the delay item with acquisition
// stopped (restarted afterwards when it was running). No result wraps
// [scopes.ErrNoResult].
func (r *Rigol) ReadStats(ctx context.Context) (scopes.Stats, error) {
	if r.cfg == nil {
		return scopes.Stats{}, scopes.ErrNotConfigured
	}
	s := scopes.Stats{Window: r.window, Snapshot: scopes.SnapshotFrozen}
	q := ":MEASure:STATistic:ITEM? "
	var raw fieldReplies
	el, err := r.frozen(ctx, rigolFreeze, func() error {
		var err error
		for _, f := range []struct {
			typ string
			v   *scopes.Value
			r   *string
		}{{"AVERages", &s.Mean, &raw.mean}, {"MINimum", &s.Min, &raw.min}, {"MAXimum", &s.Max, &raw.max}, {"DEViation", &s.StdDev, &raw.stddev}} {
			if *f.v, err = r.stat(ctx, q+f.typ+","+r.item, f.r); err != nil {
				return err
			}
		}
		if r.tab.count {
			s.Count, err = r.count(ctx, q+"CNT,"+r.item, &raw.count)
		}
		return err
	})
	if err != nil {
		return scopes.Stats{}, fmt.Errorf("rigol stats: %w", err)
	}
	s.Elapsed = el
	if err := s.CheckResult(q + "AVERages," + r.item); err != nil {
		return s, fmt.Errorf("rigol stats: %w", err)
	}
	if err := r.plausible(s, raw.of); err != nil {
		return scopes.Stats{}, fmt.Errorf("rigol stats: %w", err)
	}
	return s, nil
}
