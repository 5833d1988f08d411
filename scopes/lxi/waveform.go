package lxi

import (
	"fmt"
	"math"
	"strings"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// Preamble is a Keysight InfiniiVision :WAVeform:PREamble? reply
// (3000 X-Series Programmer's Guide, ":WAVeform:PREamble"): ten
// comma-separated values. Sample i of a BYTE record is at time
// (i − XReference)·XIncrement + XOrigin seconds and has voltage
// (b − YReference)·YIncrement + YOrigin volts.
type Preamble struct {
	Format, Type, Points, Count                                      int
	XIncrement, XOrigin, XReference, YIncrement, YOrigin, YReference float64
}

// ParsePreamble parses a :WAVeform:PREamble? reply; errors wrap
// [scopes.ErrGarbage].
func ParsePreamble(s string) (Preamble, error) {
	f := strings.Split(strings.TrimSpace(s), ",")
	if len(f) != 10 {
		return Preamble{}, fmt.Errorf("%w: preamble has %d fields, want 10: %q", scopes.ErrGarbage, len(f), clipS(s))
	}
	var v [10]float64
	for i := range f {
		x, err := scpi.ParseNumber(f[i])
		if err != nil || math.IsInf(x, 0) {
			return Preamble{}, fmt.Errorf("preamble field %d: %w", i+1, err)
		}
		v[i] = x
	}
	p := Preamble{Format: int(v[0]), Type: int(v[1]), Points: int(v[2]), Count: int(v[3]),
		XIncrement: v[4], XOrigin: v[5], XReference: v[6], YIncrement: v[7], YOrigin: v[8], YReference: v[9]}
	if p.XIncrement <= 0 || p.YIncrement == 0 || p.Points < 0 {
		return Preamble{}, fmt.Errorf("%w: preamble x/y increment or points invalid: %q", scopes.ErrGarbage, clipS(s))
	}
	return p, nil
}

// WaveformEdges finds the threshold crossings of a BYTE waveform record
// and returns them as edges in nanoseconds (linear interpolation between
// the two samples around each crossing, so the error is well under one
// sample period for clean edges). A crossing needs the signal to leave a
// hysteresis band of ±hyst volts around the threshold, so noise at the
// threshold does not produce edge bursts. Byte value 0 (Keysight's "hole",
// no data) is skipped.
func WaveformEdges(dst []scopes.Edge, data []byte, p Preamble, threshold, hyst float64) []scopes.Edge {
	volt := func(b byte) float64 { return (float64(b)-p.YReference)*p.YIncrement + p.YOrigin }
	state := 0 // -1 below band, +1 above band, 0 unknown
	prevI, prevV := -1, 0.0
	for i, b := range data {
		if b == 0 {
			continue
		}
		v := volt(b)
		ns := 0
		switch {
		case v > threshold+hyst:
			ns = 1
		case v < threshold-hyst:
			ns = -1
		}
		if ns != 0 && state != 0 && ns != state && prevI >= 0 {
			// interpolate the threshold crossing between prevI and i
			frac := 0.5
			if v != prevV {
				frac = math.Min(1, math.Max(0, (threshold-prevV)/(v-prevV)))
			}
			x := float64(prevI) + frac*float64(i-prevI)
			t := ((x-p.XReference)*p.XIncrement + p.XOrigin) * 1e9
			dst = append(dst, scopes.Edge{TimeNs: int64(math.Round(t)), Rising: ns > 0})
		}
		if ns != 0 {
			state = ns
		}
		prevI, prevV = i, v
	}
	return dst
}

// recordThreshold is the midpoint of a record's voltage range, the
// default threshold when the configuration gives none.
func recordThreshold(data []byte, p Preamble) (float64, float64) {
	lo, hi := 255, 1
	for _, b := range data {
		if b == 0 {
			continue
		}
		lo, hi = min(lo, int(b)), max(hi, int(b))
	}
	vlo := (float64(lo)-p.YReference)*p.YIncrement + p.YOrigin
	vhi := (float64(hi)-p.YReference)*p.YIncrement + p.YOrigin
	return (vlo + vhi) / 2, math.Abs(vhi-vlo) / 10
}
