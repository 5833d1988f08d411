package scpi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/scopes"
)

// errNeedMore reports that a block header is incomplete so far.
var errNeedMore = errors.New("block header incomplete")

// NoMeasurement is the threshold at and above which Tektronix, Keysight and
// Rigol report "no measurement" (they send 9.9E37 or 9.91E37).
const NoMeasurement = 9.9e37

// ParseNumber parses an IEEE 488.2 NR1/NR2/NR3 numeric reply ("1.5E-06",
// "+12", "-3.0"). Surrounding whitespace is ignored; anything else —
// including NaN/Inf spellings and trailing junk — wraps
// [scopes.ErrGarbage].
func ParseNumber(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty number", scopes.ErrGarbage)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-' || c == 'e' || c == 'E') {
			return 0, fmt.Errorf("%w: %q is not a number", scopes.ErrGarbage, clip(t))
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !math.IsNaN(v) {
			return v, nil // ±Inf from overflow: still a number, and >= NoMeasurement
		}
		return 0, fmt.Errorf("%w: %q is not a number", scopes.ErrGarbage, clip(t))
	}
	return v, nil
}

// IsNoMeasurement reports whether v is an instrument's "no measurement"
// value (|v| >= 9.9E37).
func IsNoMeasurement(v float64) bool { return math.Abs(v) >= NoMeasurement }

// ParseStat parses a statistic reply into a [scopes.Value]: a number below
// 9.9E37 is present; 9.9E37 and above, "****" and "OFF" (Siglent) are
// missing. Anything else wraps [scopes.ErrGarbage].
func ParseStat(s string) (scopes.Value, error) {
	t := strings.TrimSpace(s)
	if strings.Trim(t, "*") == "" && t != "" || strings.EqualFold(t, "OFF") {
		return scopes.Value{}, nil
	}
	v, err := ParseNumber(t)
	if err != nil {
		return scopes.Value{}, err
	}
	if IsNoMeasurement(v) {
		return scopes.Value{}, nil
	}
	return scopes.Some(v), nil
}

// ParseCount parses a population count reply (NR1, or NR3 such as
// "3.0000E+00" on Rigol) into a [scopes.Count]; "no measurement" spellings
// give a missing count. Negative or fractional counts wrap
// [scopes.ErrGarbage].
func ParseCount(s string) (scopes.Count, error) {
	v, err := ParseStat(s)
	if err != nil || !v.OK {
		return scopes.Count{}, err
	}
	if v.V < 0 || v.V != math.Trunc(v.V) || v.V > 1e15 {
		return scopes.Count{}, fmt.Errorf("%w: %q is not a count", scopes.ErrGarbage, clip(s))
	}
	return scopes.Count{N: int64(v.V), OK: true}, nil
}

// ParseBlockHeader parses the IEEE 488.2 definite-length block header at
// the start of b ("#<d><d digits of length>"). It returns the header length
// and the data length. An incomplete header returns errNeedMore (callers
// read more and retry); a malformed one wraps [scopes.ErrGarbage]. The
// indefinite form "#0" returns (2, -1, nil).
func ParseBlockHeader(b []byte) (hdr, n int, err error) {
	if len(b) < 2 {
		if len(b) == 1 && b[0] != '#' {
			return 0, 0, fmt.Errorf("%w: block does not start with '#': %q", scopes.ErrGarbage, clip(string(b)))
		}
		return 0, 0, errNeedMore
	}
	if b[0] != '#' {
		return 0, 0, fmt.Errorf("%w: block does not start with '#': %q", scopes.ErrGarbage, clip(string(b)))
	}
	d := b[1]
	if d < '0' || d > '9' {
		return 0, 0, fmt.Errorf("%w: block length-digit count %q", scopes.ErrGarbage, d)
	}
	nd := int(d - '0')
	if nd == 0 {
		return 2, -1, nil
	}
	if len(b) < 2+nd {
		return 0, 0, errNeedMore
	}
	for _, c := range b[2 : 2+nd] {
		if c < '0' || c > '9' {
			return 0, 0, fmt.Errorf("%w: block length %q", scopes.ErrGarbage, clip(string(b[2:2+nd])))
		}
		n = n*10 + int(c-'0')
	}
	return 2 + nd, n, nil
}

// ParseErrorEntry splits a SCPI error-queue entry `<code>,"<text>"` into its
// code and unquoted text (Keysight, Rigol :SYSTem:ERRor?).
func ParseErrorEntry(s string) (int, string, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexByte(t, ',')
	if i < 0 {
		return 0, "", fmt.Errorf("%w: error entry %q has no comma", scopes.ErrGarbage, clip(t))
	}
	code, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(t[:i]), "+"))
	if err != nil {
		return 0, "", fmt.Errorf("%w: error code in %q", scopes.ErrGarbage, clip(t))
	}
	return code, unquote(strings.TrimSpace(t[i+1:])), nil
}

// ParseEvents splits a Tektronix ALLEv? reply (HEADer OFF) —
// `<code>,"<text>"[,<code>,"<text>"...]` — into entries. Commas inside the
// quoted text are kept; doubled quotes ("") are unescaped.
func ParseEvents(s string) ([]scopes.InstrumentError, error) {
	var out []scopes.InstrumentError
	t := strings.TrimSpace(s)
	for t != "" {
		i := strings.IndexByte(t, ',')
		if i < 0 {
			return out, fmt.Errorf("%w: event list %q", scopes.ErrGarbage, clip(s))
		}
		code, err := strconv.Atoi(strings.TrimSpace(t[:i]))
		if err != nil {
			return out, fmt.Errorf("%w: event code in %q", scopes.ErrGarbage, clip(s))
		}
		t = strings.TrimSpace(t[i+1:])
		if t == "" || t[0] != '"' {
			return out, fmt.Errorf("%w: event text not quoted in %q", scopes.ErrGarbage, clip(s))
		}
		// find the closing quote, honouring "" escapes
		j := 1
		var sb strings.Builder
		for {
			if j >= len(t) {
				return out, fmt.Errorf("%w: unterminated event text in %q", scopes.ErrGarbage, clip(s))
			}
			if t[j] == '"' {
				if j+1 < len(t) && t[j+1] == '"' {
					sb.WriteByte('"')
					j += 2
					continue
				}
				break
			}
			sb.WriteByte(t[j])
			j++
		}
		out = append(out, scopes.InstrumentError{Code: code, Text: sb.String()})
		t = strings.TrimSpace(t[j+1:])
		if t != "" {
			if t[0] != ',' {
				return out, fmt.Errorf("%w: junk after event in %q", scopes.ErrGarbage, clip(s))
			}
			t = strings.TrimSpace(t[1:])
		}
	}
	return out, nil
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return s
}

// clip shortens s for error messages.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
