package soakrun

import (
	"strings"
	"time"

	"github.com/hilrig/hilrig/rig/console"
)

// Captures finds a board's console capture (false without one):
// [rig.Rig.Console].
type Captures func(board string) (*console.Capture, bool)

// flaggedBefore bounds the flagged lines ConsoleTail puts before a tail.
const flaggedBefore = 5

// ConsoleTail is a [Runner.ConsoleTail] over console captures: a board's
// last n lines ("" without a capture), preceded by its flagged lines
// (panic, oops, watchdog, OOM; the last 5) older than those: a kernel
// panic's register and stack dump is longer than a tail (47 lines on
// the vm board), and the panic line is what the fault is about.
func ConsoleTail(captures Captures, n int) func(board string) string {
	return func(board string) string {
		c, ok := captures(board)
		if !ok {
			return ""
		}
		tail := c.Tail(n)
		var older []console.Line
		for _, l := range c.Flags() {
			if len(tail) == 0 || l.Mono < tail[0].Mono {
				older = append(older, l)
			}
		}
		var b strings.Builder
		for _, l := range older[max(len(older)-flaggedBefore, 0):] {
			b.WriteString(l.String() + "\n")
		}
		if len(older) > 0 && len(tail) > 0 {
			b.WriteString("[...]\n")
		}
		for _, l := range tail {
			b.WriteString(l.String() + "\n")
		}
		return b.String()
	}
}

// ConsolePanic is a [Runner.ConsolePanic] over console captures: the
// first panic or oops line of a board's console after since ("" without
// one, or without a capture).
func ConsolePanic(captures Captures) func(board string, since time.Time) string {
	return func(board string, since time.Time) string {
		c, ok := captures(board)
		if !ok {
			return ""
		}
		for _, l := range c.Flags() {
			if (l.Flag == console.Panic || l.Flag == console.Oops) && l.Wall.After(since) {
				return l.Text
			}
		}
		return ""
	}
}
