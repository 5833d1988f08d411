package lxi

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// Keysight drives a Keysight InfiniiVision 3000 X / 4000 X scope over its
// raw socket (5025) or VXI-11.
//
// Commands, from the "Keysight InfiniiVision 3000 X-Series Oscilloscopes
// Programmer's Guide" (and the 4000 X guide, same :MEASure subsystem),
// chapter ":MEASure Commands", and chapter ":SYSTem Commands":
//   - :MEASure:CLEar — remove all measurements from the display.
//   - :MEASure:DEFine DELay,<edge_spec1>,<edge_spec2> — edge_spec is
//     [<slope>]<occurrence>, slope "+" rising / "-" falling; we use the
//     first occurrence (+1/-1).
//   - :MEASure:SOURce CHANnel<n> then :MEASure:DEFine
//     THResholds,ABSolute,<upper>,<middle>,<lower> — threshold for the
//     current source; only the middle level matters to a delay, upper and
//     lower are placed ±10 % (at least 10 mV) around it because the
//     instrument requires upper > middle > lower.
//   - :MEASure:DELay CHANnel<src>,CHANnel<dst> — installs the delay
//     measurement (both sources always given).
//   - :MEASure:STATistics ON — :MEASure:RESults? then returns, for each
//     displayed measurement, label, current, min, max, mean, std dev, count.
//   - :MEASure:STATistics:MCOunt {<n>|INFinite} — "the maximum number of
//     values used when calculating measurement statistics" (2..2000):
//     reported as a rolling window of the last n; without a population
//     limit the driver sets INFinite (every value since the reset).
//   - :MEASure:STATistics:RESet — reset statistics.
//   - :TIMebase:RANGe? (chapter ":TIMebase Commands") — the full-scale
//     horizontal time in seconds, read at ConfigureDelay: no delay can
//     exceed it (a reading beyond it is refused, [scopes.ErrImplausible]).
//   - :SYSTem:ERRor? — <code>,"<text>", 0 when the queue is empty; read
//     after every configuration command so an error names the command.
//   - FetchDelays, chapter ":WAVeform Commands": :WAVeform:SOURce
//     CHANnel<n>, :WAVeform:FORMat BYTE, :WAVeform:POINts:MODE RAW,
//     :WAVeform:POINts MAXimum, :WAVeform:PREamble? and :WAVeform:DATA?
//     (an IEEE 488.2 definite-length block) for both channels of the last
//     acquisition; stop the acquisition (:STOP) first on a real instrument
//     so both records come from the same acquisition. Without
//     :WAVeform:POINts the instrument transfers 1000 time buckets across
//     the screen (the guide's ":WAVeform:POINts" entry; MAXimum with the
//     instrument stopped transfers every point of the record), which made
//     a 50 µs delay read 51 µs: [Keysight.DelayResolution] reports the
//     sample interval the delays came from.
//
// *IDN? must name KEYSIGHT (or AGILENT) TECHNOLOGIES and a 3000 X / 4000 X
// model before anything is configured ([scopes.ErrWrongInstrument]
// otherwise). :MEASure:RESults? returns every figure in one reply, so no
// freeze is needed. "No measurement" is 9.9E+37: a missing statistic, and
// [scopes.ErrNoResult] for the mean. All five statistics are reported. Not
// safe for concurrent use.
type Keysight struct {
	base
	window scopes.Window
	// resolution is the coarsest XIncrement (s) of the last fetch.
	resolution float64
}

var (
	_ Instrument           = (*Keysight)(nil)
	_ scopes.DelayFetcher  = (*Keysight)(nil)
	_ scopes.DelayResolver = (*Keysight)(nil)
)

// DelayResolution returns the sample interval (s) of the coarser record
// behind the last FetchDelays; 0 before one. No I/O.
func (k *Keysight) DelayResolution() float64 { return k.resolution }

// DialKeysight connects to an InfiniiVision scope. It blocks until connected.
func DialKeysight(ctx context.Context, o Options) (*Keysight, error) {
	b, err := open(ctx, "keysight", o, keysightFamilies)
	if err != nil {
		return nil, err
	}
	return &Keysight{base: b}, nil
}

func ksEdge(p scopes.Polarity) string {
	if p == scopes.Falling {
		return "-1"
	}
	return "+1"
}

// ConfigureDelay installs the delay measurement and checks :SYSTem:ERRor?.
func (k *Keysight) ConfigureDelay(ctx context.Context, cfg scopes.DelayConfig) error {
	k.cfg = nil // a failed reconfiguration leaves nothing half-set to read
	if err := cfg.Validate(); err != nil {
		return err
	}
	cmds := []string{"*CLS", ":MEASure:CLEar",
		fmt.Sprintf(":MEASure:DEFine DELay,%s,%s", ksEdge(cfg.SourceEdge), ksEdge(cfg.DestEdge))}
	if cfg.HasThreshold {
		d := math.Max(0.01, 0.1*math.Abs(cfg.ThresholdV))
		for _, ch := range []int{cfg.Source, cfg.Dest} {
			cmds = append(cmds, fmt.Sprintf(":MEASure:SOURce CHANnel%d", ch),
				fmt.Sprintf(":MEASure:DEFine THResholds,ABSolute,%.6E,%.6E,%.6E", cfg.ThresholdV+d, cfg.ThresholdV, cfg.ThresholdV-d))
		}
	}
	cmds = append(cmds, fmt.Sprintf(":MEASure:DELay CHANnel%d,CHANnel%d", cfg.Source, cfg.Dest),
		":MEASure:STATistics ON")
	window := scopes.Window{Kind: scopes.WindowAll}
	if cfg.PopulationLimit > 0 {
		if cfg.PopulationLimit < 2 || cfg.PopulationLimit > 2000 {
			return fmt.Errorf("%w: keysight :MEASure:STATistics:MCOunt takes 2..2000, not PopulationLimit %d", scopes.ErrBadConfig, cfg.PopulationLimit)
		}
		cmds = append(cmds, fmt.Sprintf(":MEASure:STATistics:MCOunt %d", cfg.PopulationLimit))
		window = scopes.Window{Kind: scopes.WindowLast, N: int64(cfg.PopulationLimit)}
	} else {
		cmds = append(cmds, ":MEASure:STATistics:MCOunt INFinite")
	}
	if err := k.configure(ctx, k.systemErrors, cmds...); err != nil {
		return fmt.Errorf("keysight configure: %w", err)
	}
	if err := k.readSpan(ctx, ":TIMebase:RANGe?", 1); err != nil {
		return fmt.Errorf("keysight configure: %w", err)
	}
	k.cfg, k.window = &cfg, window
	return nil
}

// ResetStats sends :MEASure:STATistics:RESet.
func (k *Keysight) ResetStats(ctx context.Context) error {
	return k.resetStats(ctx, "keysight", ":MEASure:STATistics:RESet")
}

// ReadStats parses :MEASure:RESults? for the delay measurement's row.
func (k *Keysight) ReadStats(ctx context.Context) (scopes.Stats, error) {
	if k.cfg == nil {
		return scopes.Stats{}, scopes.ErrNotConfigured
	}
	asked := time.Now()
	s, err := k.c.Query(ctx, ":MEASure:RESults?")
	if err != nil {
		return scopes.Stats{}, fmt.Errorf("keysight stats: %w", err)
	}
	acked := time.Now()
	st, err := ParseKeysightResults(s)
	if err != nil {
		k.c.Invalidate()
		return scopes.Stats{}, fmt.Errorf("keysight stats: %w", err)
	}
	st.Window, st.Snapshot, st.Elapsed = k.window, scopes.SnapshotOneQuery, k.elapsed(asked, acked)
	if err := st.CheckResult(":MEASure:RESults? " + clipS(s)); err != nil {
		return st, fmt.Errorf("keysight stats: %w", err)
	}
	if err := k.plausible(st, func(string) string { return ":MEASure:RESults? → " + clipS(s) }); err != nil {
		return scopes.Stats{}, fmt.Errorf("keysight stats: %w", err)
	}
	return st, nil
}

// ParseKeysightResults extracts the delay row from a :MEASure:RESults?
// reply with statistics on: groups of label, current, min, max, mean,
// std dev, count. The first group whose label starts with "Delay" wins.
func ParseKeysightResults(s string) (scopes.Stats, error) {
	f := strings.Split(strings.TrimSpace(s), ",")
	for i := 0; i+6 < len(f); i++ {
		label := strings.Trim(strings.TrimSpace(f[i]), `"`)
		if !strings.HasPrefix(strings.ToLower(label), "delay") {
			continue
		}
		var st scopes.Stats
		var err error
		for j, v := range []*scopes.Value{&st.Min, &st.Max, &st.Mean, &st.StdDev} {
			if *v, err = scpi.ParseStat(f[i+2+j]); err != nil {
				return scopes.Stats{}, fmt.Errorf("%s field %d: %w", label, j+2, err)
			}
		}
		if st.Count, err = scpi.ParseCount(f[i+6]); err != nil {
			return scopes.Stats{}, fmt.Errorf("%s count: %w", label, err)
		}
		return st, nil
	}
	return scopes.Stats{}, fmt.Errorf("%w: no Delay row in :MEASure:RESults? reply %q", scopes.ErrGarbage, clipS(s))
}

func clipS(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FetchDelays downloads the source and destination waveforms of the last
// acquisition, finds their threshold crossings (the configured threshold,
// else each record's mid level) and appends the delays in seconds, paired
// like the DELAY measurement. It blocks on instrument I/O; records can be
// megabytes.
func (k *Keysight) FetchDelays(ctx context.Context, dst []float64) ([]float64, error) {
	if k.cfg == nil {
		return dst, scopes.ErrNotConfigured
	}
	var edges [2][]scopes.Edge
	k.resolution = 0
	for i, ch := range []int{k.cfg.Source, k.cfg.Dest} {
		if err := k.writeAll(ctx, fmt.Sprintf(":WAVeform:SOURce CHANnel%d", ch), ":WAVeform:FORMat BYTE",
			":WAVeform:POINts:MODE RAW", ":WAVeform:POINts MAXimum"); err != nil {
			return dst, fmt.Errorf("keysight waveform CH%d: %w", ch, err)
		}
		ps, err := k.c.Query(ctx, ":WAVeform:PREamble?")
		if err != nil {
			return dst, fmt.Errorf("keysight waveform CH%d: %w", ch, err)
		}
		pre, err := ParsePreamble(ps)
		if err != nil {
			k.c.Invalidate()
			return dst, fmt.Errorf("keysight waveform CH%d: %w", ch, err)
		}
		data, err := k.c.QueryBlock(ctx, ":WAVeform:DATA?")
		if err != nil {
			return dst, fmt.Errorf("keysight waveform CH%d: %w", ch, err)
		}
		th, hyst := recordThreshold(data, pre)
		if k.cfg.HasThreshold {
			th = k.cfg.ThresholdV
		}
		edges[i] = WaveformEdges(nil, data, pre, th, hyst)
		k.resolution = max(k.resolution, pre.XIncrement)
	}
	ns := scopes.PairDelays(nil, edges[0], edges[1], k.cfg.SourceEdge, k.cfg.DestEdge, k.cfg.PopulationLimit)
	return scopes.NsToSeconds(dst, ns), nil
}
