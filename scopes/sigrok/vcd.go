package sigrok

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/scopes"
)

// Capture is a parsed VCD capture: edges per channel name, timestamps in
// nanoseconds from the start of the capture (sample clock).
type Capture struct {
	// TimescaleNs is the length of one VCD time unit in nanoseconds
	// (fractional for sub-ns timescales).
	TimescaleNs float64
	// Edges maps a channel name ("D0") to its edges in time order. A
	// channel's initial value is not an edge.
	Edges map[string][]scopes.Edge
}

// ParseVCD reads a Value Change Dump as written by sigrok-cli -O vcd
// (IEEE 1364 section 18: $timescale, $var wire 1 <id> <name>, #<time>
// and scalar changes "0<id>"/"1<id>", several per line allowed). Only
// 1-bit wires are tracked; x/z values are ignored. Errors name the line.
func ParseVCD(r io.Reader) (*Capture, error) {
	c := &Capture{TimescaleNs: 1, Edges: map[string][]scopes.Edge{}}
	names := map[string]string{}
	last := map[string]byte{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var now int64
	inDefs := true
	var pending []string // tokens of a multi-line $ section
	line := 0
	for sc.Scan() {
		line++
		toks := strings.Fields(sc.Text())
		if inDefs {
			pending = append(pending, toks...)
			for {
				end := -1
				for i, t := range pending {
					if t == "$end" {
						end = i
						break
					}
				}
				if end < 0 {
					break
				}
				sec := pending[:end]
				pending = pending[end+1:]
				if len(sec) == 0 {
					continue
				}
				switch sec[0] {
				case "$timescale":
					ts, err := parseTimescale(strings.Join(sec[1:], ""))
					if err != nil {
						return nil, fmt.Errorf("vcd line %d: %w", line, err)
					}
					c.TimescaleNs = ts
				case "$var":
					if len(sec) < 5 {
						return nil, fmt.Errorf("vcd line %d: %w: short $var", line, scopes.ErrGarbage)
					}
					if sec[2] == "1" {
						names[sec[3]] = sec[4]
						c.Edges[sec[4]] = nil
					}
				case "$enddefinitions":
					inDefs = false
				}
			}
			if inDefs || len(pending) == 0 {
				continue
			}
			toks, pending = pending, nil
		}
		for _, t := range toks {
			switch {
			case t[0] == '#':
				v, err := strconv.ParseInt(t[1:], 10, 64)
				if err != nil || v < now {
					return nil, fmt.Errorf("vcd line %d: %w: bad or backwards time %q", line, scopes.ErrGarbage, t)
				}
				now = v
			case t[0] == '0' || t[0] == '1':
				id := t[1:]
				name, ok := names[id]
				if !ok {
					return nil, fmt.Errorf("vcd line %d: %w: unknown identifier %q", line, scopes.ErrGarbage, id)
				}
				prev, seen := last[id]
				last[id] = t[0]
				if seen && prev != t[0] {
					c.Edges[name] = append(c.Edges[name], scopes.Edge{TimeNs: int64(float64(now) * c.TimescaleNs), Rising: t[0] == '1'})
				}
			case t[0] == 'x' || t[0] == 'X' || t[0] == 'z' || t[0] == 'Z' || t[0] == '$':
				// unknown values and $dumpvars-style keywords: ignored
			default:
				return nil, fmt.Errorf("vcd line %d: %w: token %q", line, scopes.ErrGarbage, t)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vcd line %d: %w", line, err)
	}
	if inDefs {
		return nil, fmt.Errorf("vcd: %w: no $enddefinitions", scopes.ErrGarbage)
	}
	return c, nil
}

func parseTimescale(s string) (float64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: timescale %q", scopes.ErrGarbage, s)
	}
	unit := map[string]float64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1, "ps": 1e-3, "fs": 1e-6}[s[i:]]
	if unit == 0 {
		return 0, fmt.Errorf("%w: timescale unit %q", scopes.ErrGarbage, s[i:])
	}
	return float64(n) * unit, nil
}
