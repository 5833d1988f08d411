package scopesim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/scopes"
)

func parseCh(arg, prefix string) (int, bool) {
	a := strings.ToUpper(strings.TrimSpace(arg))
	for _, p := range []string{strings.ToUpper(prefix), "CHANNEL", "CHAN", "CH", "C"} {
		if rest, ok := strings.CutPrefix(a, p); ok {
			n, err := strconv.Atoi(rest)
			if err == nil && n >= 1 && n <= 64 {
				return n, true
			}
		}
	}
	return 0, false
}

func onOff(a string) (bool, bool) {
	switch strings.ToUpper(strings.TrimSpace(a)) {
	case "ON", "1":
		return true, true
	case "OFF", "0":
		return false, true
	}
	return false, false
}

// value formats one statistic the way the dialect does, with its "no
// measurement" spelling for a missing value.
func (s *Server) value(v scopes.Value) string {
	switch s.cfg.Dialect {
	case Tek:
		if !v.OK {
			return "9.91E+37"
		}
		return fmt.Sprintf("%.4E", v.V)
	case Keysight:
		if !v.OK {
			return "+9.9E+37"
		}
		return fmt.Sprintf("%+.5E", v.V)
	case Rigol:
		if !v.OK {
			return "9.9E37"
		}
		return fmt.Sprintf("%.6E", v.V)
	}
	if !v.OK {
		return "****"
	}
	return fmt.Sprintf("%.3E", v.V)
}

// ---- Tektronix 4/5/6 Series ----

func (s *Server) tek(h string, q bool, a string) (string, bool) {
	m := &s.meas
	if _, ok := matchHeader("HEADer", h); ok {
		if q {
			return map[bool]string{true: "1", false: "0"}[s.header], true
		}
		v, ok := onOff(a)
		s.header = v
		return "", ok
	}
	if _, ok := matchHeader("VERBose", h); ok {
		_, ok := onOff(a)
		return "1", ok || q
	}
	if _, ok := matchHeader("CLEAR", h); ok && !q {
		s.resetStats()
		return "", true
	}
	if _, ok := matchHeader("ALLEv", h); ok && q {
		if len(s.errq) == 0 {
			return `0,"No events to report - queue empty"`, true
		}
		var parts []string
		for {
			e, ok := popErr(&s.errq)
			if !ok {
				break
			}
			parts = append(parts, fmt.Sprintf(`%d,"%s"`, e.code, strings.ReplaceAll(e.text, `"`, `""`)))
		}
		return strings.Join(parts, ","), true
	}
	if _, ok := matchHeader("MEASUrement:DELETEALL", h); ok && !q {
		*m = measState{}
		return "", true
	}
	if _, ok := matchHeader("MEASUrement:ADDMEAS", h); ok && !q {
		if !strings.EqualFold(a, "DELAY") || m.exists {
			return "", false
		}
		// A new DELAY measurement's second source defaults to its first.
		*m = measState{exists: true, src: 1, dst: 1, tekMeasName: "MEAS1"}
		return "", true
	}
	if _, ok := matchHeader("MEASUrement:LIST", h); ok && q {
		if !m.exists {
			return "NONE", true
		}
		return m.tekMeasName, true
	}
	nums, ok := matchHeader("MEASUrement:MEAS<n>:SOUrce<n>", h)
	if ok && m.exists && nums[0] == 1 && !q {
		ch, ok := parseCh(a, "CH")
		if !ok {
			return "", false
		}
		switch nums[1] {
		case 1:
			m.src = ch
		case 2:
			m.dst = ch
		default:
			return "", false
		}
		return "", true
	}
	if nums, ok := matchHeader("MEASUrement:MEAS<n>:DELay:EDGE<n>", h); ok && m.exists && nums[0] == 1 && !q {
		var p scopes.Polarity
		switch strings.ToUpper(a) {
		case "RIS", "RISE":
			p = scopes.Rising
		case "FALL":
			p = scopes.Falling
		default:
			return "", false
		}
		if nums[1] == 1 {
			m.srcE = p
		} else {
			m.dstE = p
		}
		return "", true
	}
	for _, pat := range []string{"MEASUrement:MEAS<n>:GLOBalref", "MEASUrement:MEAS<n>:DISPlaystat:ENABle",
		"MEASUrement:MEAS<n>:REFLevels<n>:METHod"} {
		if _, ok := matchHeader(pat, h); ok && m.exists && !q {
			return "", true
		}
	}
	for _, pat := range []string{"MEASUrement:MEAS<n>:REFLevels<n>:ABSolute:RISEMid", "MEASUrement:MEAS<n>:REFLevels<n>:ABSolute:FALLMid"} {
		if _, ok := matchHeader(pat, h); ok && m.exists && !q {
			v, err := strconv.ParseFloat(a, 64)
			m.threshold, m.hasThresh = v, err == nil
			return "", err == nil
		}
	}
	if _, ok := matchHeader("MEASUrement:MEAS<n>:POPUlation:LIMIT:STATE", h); ok && m.exists && !q {
		v, ok := onOff(a)
		m.limitOn = v
		return "", ok
	}
	if _, ok := matchHeader("HORizontal:SCAle", h); ok && q {
		return fmt.Sprintf("%.4E", s.timebase), true
	}
	if _, ok := matchHeader("ACQuire:STATE", h); ok {
		if q {
			return map[bool]string{true: "0", false: "1"}[s.stopped], true
		}
		switch strings.ToUpper(a) {
		case "STOP", "OFF", "0":
			s.stopped = true
		case "RUN", "ON", "1":
			s.stopped = false
		default:
			return "", false
		}
		return "", true
	}
	if _, ok := matchHeader("MEASUrement:MEAS<n>:POPUlation:LIMIT:VALue", h); ok && m.exists && !q {
		n, err := strconv.Atoi(a)
		m.limit = n
		return "", err == nil && n > 0
	}
	st := s.stats()
	for _, f := range []struct {
		pat string
		v   scopes.Value
	}{{"MEASUrement:MEAS<n>:RESUlts:ALLAcqs:MEAN", st.Mean}, {"MEASUrement:MEAS<n>:RESUlts:ALLAcqs:MINimum", st.Min},
		{"MEASUrement:MEAS<n>:RESUlts:ALLAcqs:MAXimum", st.Max}, {"MEASUrement:MEAS<n>:RESUlts:ALLAcqs:STDDev", st.StdDev}} {
		if _, ok := matchHeader(f.pat, h); ok && m.exists && q {
			return s.value(f.v), true
		}
	}
	if _, ok := matchHeader("MEASUrement:MEAS<n>:RESUlts:ALLAcqs:POPUlation", h); ok && m.exists && q {
		return strconv.FormatInt(st.Count.N, 10), true
	}
	return "", false
}

// ---- Keysight InfiniiVision ----

func (s *Server) keysight(h string, q bool, a string) (string, bool) {
	m := &s.meas
	switch {
	case is(h, ":SYSTem:ERRor") && q:
		if e, ok := popErr(&s.errq); ok {
			return fmt.Sprintf(`%+d,"%s"`, e.code, e.text), true
		}
		return `+0,"No error"`, true
	case is(h, ":MEASure:CLEar") && !q:
		*m = measState{}
		return "", true
	case is(h, ":MEASure:DEFine") && !q:
		f := strings.Split(a, ",")
		switch strings.ToUpper(f[0]) {
		case "DEL", "DELAY":
			if len(f) != 3 {
				return "", false
			}
			m.srcE, m.dstE = ksEdge(f[1]), ksEdge(f[2])
			return "", true
		case "THR", "THRESHOLDS":
			if len(f) != 5 {
				return "", false
			}
			v, err := strconv.ParseFloat(f[3], 64)
			m.threshold, m.hasThresh = v, err == nil
			return "", err == nil
		}
		return "", false
	case is(h, ":MEASure:SOURce") && !q:
		_, ok := parseCh(a, "CHANnel")
		return "", ok
	case is(h, ":MEASure:DELay") && !q:
		f := strings.Split(a, ",")
		if len(f) != 2 {
			return "", false
		}
		src, ok1 := parseCh(f[0], "CHANnel")
		dst, ok2 := parseCh(f[1], "CHANnel")
		if !ok1 || !ok2 {
			return "", false
		}
		se, de := m.srcE, m.dstE
		*m = measState{exists: true, src: src, dst: dst, srcE: se, dstE: de}
		return "", true
	case is(h, ":MEASure:STATistics") && !q:
		m.stats = strings.EqualFold(a, "ON")
		return "", true
	case is(h, ":MEASure:STATistics:MCOunt") && !q:
		if strings.EqualFold(a, "INF") || strings.EqualFold(a, "INFINITE") {
			s.window = 0
			return "", true
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 2 || n > 2000 {
			return "", false
		}
		s.window = n
		return "", true
	case is(h, ":MEASure:STATistics:RESet") && !q:
		s.resetStats()
		return "", true
	case is(h, ":WAVeform:SOURce") && !q:
		ch, ok := parseCh(a, "CHANnel")
		s.wfSrc = ch
		return "", ok
	case is(h, ":WAVeform:FORMat") && !q:
		return "", strings.EqualFold(a, "BYTE")
	case is(h, ":WAVeform:POINts:MODE") && !q:
		return "", true
	case is(h, ":WAVeform:POINts"):
		// Without a setting the record is 1000 time buckets across the
		// screen; MAXimum transfers every acquired point.
		if q {
			return strconv.Itoa(s.waveform().points), true
		}
		if u := strings.ToUpper(a); u == "MAX" || u == "MAXIMUM" {
			s.wfPoints = -1
			return "", true
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 100 {
			return "", false
		}
		s.wfPoints = n
		return "", true
	case is(h, ":TIMebase:RANGe") && q:
		return fmt.Sprintf("%+.10E", 10*s.timebase), true
	case is(h, ":TIMebase:SCALe") && q:
		return fmt.Sprintf("%+.10E", s.timebase), true
	case is(h, ":WAVeform:PREamble") && q:
		p := s.waveform()
		return fmt.Sprintf("+0,+0,+%d,+1,%+.10E,%+.10E,+0,%+.6E,+0.0E+00,+%d", p.points, p.xinc, p.xorg, wfYInc, wfYRef), true
	case is(h, ":WAVeform:DATA") && q:
		p := s.waveform()
		return string(s.waveformData(p)), true
	case is(h, ":MEASure:RESults") && q:
		if !m.exists {
			return "", true
		}
		d := s.delays()
		st := s.stats()
		var cur scopes.Value // "current": the last delay measured
		if len(d) > 0 {
			cur = scopes.Some(d[len(d)-1])
		}
		return fmt.Sprintf("Delay(%d-%d),%s,%s,%s,%s,%s,%d", m.src, m.dst, s.value(cur), s.value(st.Min),
			s.value(st.Max), s.value(st.Mean), s.value(st.StdDev), st.Count.N), true
	}
	return "", false
}

func ksEdge(a string) scopes.Polarity {
	if strings.HasPrefix(strings.TrimSpace(a), "-") {
		return scopes.Falling
	}
	return scopes.Rising
}

func is(h, pat string) bool { _, ok := matchHeader(pat, h); return ok }

// ---- Rigol DS1000Z / MSO5000 ----

func (s *Server) rigol(h string, q bool, a string) (string, bool) {
	m := &s.meas
	switch {
	case is(h, ":SYSTem:ERRor") && q, is(h, ":SYSTem:ERRor:NEXT") && q:
		if e, ok := popErr(&s.errq); ok {
			return fmt.Sprintf(`%d,"%s"`, e.code, e.text), true
		}
		return `0,"No error"`, true
	case is(h, ":MEASure:SETup:DSA") && !q:
		ch, ok := parseCh(a, "CHANnel")
		m.src = ch
		return "", ok
	case is(h, ":MEASure:SETup:DSB") && !q:
		ch, ok := parseCh(a, "CHANnel")
		m.dst = ch
		return "", ok
	case is(h, ":MEASure:STATistic:DISPlay") && !q:
		_, ok := onOff(a)
		return "", ok
	case is(h, ":MEASure:STATistic:MODE") && !q && s.rigolFam == ds1000z:
		// DS1000Z only: MSO5000 and DHO have no such header (-113).
		u := strings.ToUpper(a)
		return "", u == "DIFF" || u == "DIFFERENCE" || u == "EXTR" || u == "EXTREMUM"
	case is(h, ":MEASure:STATistic:COUNt") && s.rigolFam != ds1000z:
		if q {
			return strconv.Itoa(s.window), true
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 2 || n > 100000 {
			return "", false
		}
		s.window = n
		return "", true
	case is(h, ":TIMebase:MAIN:SCALe") && q, is(h, ":TIMebase:SCALe") && q:
		return fmt.Sprintf("%.4E", s.timebase), true
	case is(h, ":TRIGger:STATus") && q:
		if s.stopped {
			return "STOP", true
		}
		return "AUTO", true
	case is(h, ":STOP") && !q:
		s.stopped = true
		return "", true
	case is(h, ":RUN") && !q:
		s.stopped = false
		return "", true
	case is(h, ":MEASure:STATistic:RESet") && !q:
		s.resetStats()
		return "", true
	case is(h, ":MEASure:STATistic:ITEM"):
		f := strings.Split(a, ",")
		if q {
			if len(f) != 4 || !m.exists {
				return "", false
			}
			st := s.stats()
			switch strings.ToUpper(f[0]) {
			case "AVER", "AVERAGES":
				return s.value(st.Mean), true
			case "MIN", "MINIMUM":
				return s.value(st.Min), true
			case "MAX", "MAXIMUM":
				return s.value(st.Max), true
			case "DEV", "DEVIATION":
				return s.value(st.StdDev), true
			case "CNT":
				if s.rigolFam == ds1000z {
					return "", false
				}
				return fmt.Sprintf("%.4E", float64(st.Count.N)), true
			}
			return "", false
		}
		if len(f) != 3 {
			return "", false
		}
		se, de, ok := rigolItem(f[0], s.rigolFam == ds1000z)
		src, ok1 := parseCh(f[1], "CHANnel")
		dst, ok2 := parseCh(f[2], "CHANnel")
		if !ok || !ok1 || !ok2 {
			return "", false
		}
		m.exists, m.src, m.dst, m.srcE, m.dstE = true, src, dst, se, de
		return "", true
	}
	return "", false
}

// rigolFamily is the Rigol command table the simulator speaks.
type rigolFamily int

const (
	mso5000 rigolFamily = iota
	ds1000z
	dho
)

// rigolFamilyOf picks the family from the *IDN? model, as the instrument
// is what it is: DS1xxxZ → DS1000Z, DHO8xx/9xx → DHO, else MSO5000.
func rigolFamilyOf(idn string) rigolFamily {
	mod := strings.ToUpper(scopes.ParseIDN(idn).Model)
	switch {
	case strings.HasPrefix(mod, "DS1") && strings.HasSuffix(strings.TrimSuffix(mod, " PLUS"), "Z"):
		return ds1000z
	case strings.HasPrefix(mod, "DHO"):
		return dho
	}
	return mso5000
}

func rigolItem(item string, ds1000z bool) (scopes.Polarity, scopes.Polarity, bool) {
	pol := map[byte]scopes.Polarity{'R': scopes.Rising, 'F': scopes.Falling}
	it := strings.ToUpper(item)
	if ds1000z {
		switch it {
		case "RDEL", "RDELAY":
			return scopes.Rising, scopes.Rising, true
		case "FDEL", "FDELAY":
			return scopes.Falling, scopes.Falling, true
		}
		return 0, 0, false
	}
	if len(it) == 5 && strings.HasSuffix(it, "DEL") || len(it) == 7 && strings.HasSuffix(it, "DELAY") {
		a, ok1 := pol[it[0]]
		b, ok2 := pol[it[1]]
		return a, b, ok1 && ok2
	}
	return 0, 0, false
}

// ---- Siglent SDS2000X Plus ----

func (s *Server) siglent(h string, q bool, a string) (string, bool) {
	m := &s.meas
	switch {
	case is(h, ":MEASure") && !q, is(h, ":MEASure:MODE") && !q, is(h, ":MEASure:ADVanced:STATistics") && !q:
		return "", true
	case is(h, ":MEASure:ADVanced:P<n>") && !q:
		v, ok := onOff(a)
		m.exists = v
		return "", ok
	case is(h, ":MEASure:ADVanced:P<n>:TYPE") && !q:
		t := strings.ToUpper(a)
		pol := map[byte]scopes.Polarity{'R': scopes.Rising, 'F': scopes.Falling}
		if len(t) != 3 || t[0] != 'F' {
			return "", false
		}
		a, ok1 := pol[t[1]]
		b, ok2 := pol[t[2]]
		m.srcE, m.dstE = a, b
		return "", ok1 && ok2
	case is(h, ":MEASure:ADVanced:P<n>:SOURce1") && !q:
		ch, ok := parseCh(a, "C")
		m.src = ch
		return "", ok
	case is(h, ":MEASure:ADVanced:P<n>:SOURce2") && !q:
		ch, ok := parseCh(a, "C")
		m.dst = ch
		return "", ok
	case is(h, ":MEASure:ADVanced:STATistics:MAXCount"):
		if q {
			return strconv.Itoa(s.window), true
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return "", false
		}
		s.window = n
		return "", true
	case is(h, ":TIMebase:SCALe") && q:
		return fmt.Sprintf("%.2E", s.timebase), true
	case is(h, ":TRIGger:STATus") && q:
		if s.stopped {
			return "Stop", true
		}
		return "Auto", true
	case is(h, ":TRIGger:STOP") && !q:
		s.stopped = true
		return "", true
	case is(h, ":TRIGger:RUN") && !q:
		s.stopped = false
		return "", true
	case is(h, ":MEASure:ADVanced:STATistics:RESet") && !q:
		s.resetStats()
		return "", true
	case is(h, ":MEASure:ADVanced:P<n>:STATistics") && q:
		if !m.exists {
			return "OFF", true
		}
		st := s.stats()
		switch strings.ToUpper(a) {
		case "MEAN":
			return s.value(st.Mean), true
		case "MIN", "MINIMUM":
			return s.value(st.Min), true
		case "MAX", "MAXIMUM":
			return s.value(st.Max), true
		case "STD", "STDEV":
			return s.value(st.StdDev), true
		case "COUN", "COUNT":
			return strconv.FormatInt(st.Count.N, 10), true
		}
		return "", false
	}
	return "", false
}

// Simulated waveform records (Keysight BYTE format): 0 V is byte wfYRef,
// 3.3 V is wfYRef+200; the record spans the stored edges of both delay
// channels plus a margin, at most wfMaxPoints samples (1000 unless
// :WAVeform:POINts asked for more) and at least 1 ns
// per sample.
const (
	wfYRef      = 20
	wfYInc      = 3.3 / 200
	wfMaxPoints = 1_000_000
	// wfDefaultPoints is the record :WAVeform:DATA? sends when
	// :WAVeform:POINts was never set: 1000 time buckets across the screen.
	wfDefaultPoints = 1000
)

type wfParams struct {
	points     int
	startNs    float64
	xinc, xorg float64 // seconds
}

func (s *Server) waveform() wfParams {
	m := s.meas
	var lo, hi int64
	first := true
	for _, ch := range []int{m.src, m.dst, s.wfSrc} {
		for _, e := range []int{0, len(s.edges[ch]) - 1} {
			if e < 0 || len(s.edges[ch]) == 0 {
				continue
			}
			t := s.edges[ch][e].TimeNs
			if first || t < lo {
				lo = t
			}
			if first || t > hi {
				hi = t
			}
			first = false
		}
	}
	if first {
		return wfParams{points: 1000, xinc: 1e-9}
	}
	span := float64(hi-lo) * 1.1
	start := float64(lo) - float64(hi-lo)*0.05 - 10
	n := int(span) + 20
	step := 1.0
	limit := wfMaxPoints
	switch {
	case s.wfPoints == 0:
		limit = wfDefaultPoints
	case s.wfPoints > 0:
		limit = min(limit, s.wfPoints)
	}
	if n > limit {
		step = (span + 20) / float64(limit)
		n = limit
	}
	return wfParams{points: n, startNs: start, xinc: step * 1e-9, xorg: start * 1e-9}
}

func (s *Server) waveformData(p wfParams) []byte {
	e := s.edges[s.wfSrc]
	level := len(e) > 0 && !e[0].Rising // level before the first edge
	out := make([]byte, 0, p.points+16)
	hdr := fmt.Sprintf("#8%08d", p.points)
	out = append(out, hdr...)
	j := 0
	for i := range p.points {
		t := p.startNs + float64(i)*p.xinc*1e9
		for j < len(e) && float64(e[j].TimeNs) <= t {
			level = e[j].Rising
			j++
		}
		b := byte(wfYRef)
		if level {
			b = wfYRef + 200
		}
		out = append(out, b)
	}
	return out
}
