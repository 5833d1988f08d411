package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
)

// DisturbedAttempts is how many times MeasureJudged measures a case, at
// most, while the host keeps disturbing it.
const DisturbedAttempts = 3

// hostProbePeriod is the host probe's timer period: fine enough to see a
// stall of a few ms, cheap enough (1,000 wake-ups/s on one thread) not to
// be one.
const hostProbePeriod = time.Millisecond

// tailBounds are the checks a host stall can fail on its own: one late
// wake-up moves them, it does not move p50 or loss.
var tailBounds = map[string]bool{"p99": true, "p99.9": true, "max": true, "jitter": true}

// MeasureJudged is Measure for cases judged on latency tails on a host
// that other work shares (the sim rack, a CI runner). While the flow runs,
// a probe thread on the controller's host measures the host's own timer
// wake-up lateness (WakeupFloor at 1 ms, CLOCK_MONOTONIC). A case that
// fails only on tail bounds (p99, p99.9, max, jitter) while the host was
// disturbed (its own wake-ups late by DisturbedLateness, or by the failing
// bound if that is tighter) cannot be blamed on the middleware: it is
// measured again, up to DisturbedAttempts in all. The case returned
// carries every earlier attempt in its notes (failing checks and host
// lateness) and the probe's p99 and max in Extra, so a re-measurement is
// never hidden, and a case that fails every attempt keeps its verdict.
// Any other failure — loss, p50, a tail on a quiet host, an error — is
// returned at once. Flows with a board off the
// controller's host are measured once, unprobed (the probe would time the
// wrong machine). Blocks for the flow(s).
func MeasureJudged(ctx context.Context, env *Env, name string, p Params) (*Ran, error) {
	local := localFlow(env.Rack, p.Path)
	var history []string
	for attempt := 1; ; attempt++ {
		var ran *Ran
		var err error
		host := hostProbed(ctx, local, func() { ran, err = Measure(ctx, env, name, p) })
		if err != nil || ran == nil || ran.Case == nil {
			return ran, err
		}
		why, disturbed := hostExplains(ran.Case, host)
		if !disturbed || attempt == DisturbedAttempts {
			ran.Case = judgedCase(env, ran.Case, host, history, attempt, disturbed, why)
			return ran, nil
		}
		history = append(history, fmt.Sprintf("attempt %d: %s", attempt, why))
	}
}

// DisturbedLateness is how late the host's own timer wake-ups must be, at
// least once during a case, for the host to count as disturbed: a host
// that cannot wake one thread within 10 ms is saturated by something else,
// and a flow of many threads queues behind that for far longer (10 udp
// subscribers under two CPU hogs: p99.9 243 ms while the probe's worst
// was below that). A bound tighter than this is disturbed by less: the
// host was late by at least the bound.
const DisturbedLateness = 10 * time.Millisecond

// hostExplains reports whether every failed check of c is a tail bound
// and the host was disturbed while c ran (see DisturbedLateness).
func hostExplains(c *report.Case, host *report.Histogram) (string, bool) {
	if c.Verdict != report.Fail || c.Failure != "" || host == nil || host.Count() == 0 {
		return "", false
	}
	hostMax := float64(host.ValueAtQuantile(100))
	need := float64(DisturbedLateness)
	var parts []string
	for _, ck := range c.Checks {
		if ck.Verdict != report.Fail {
			continue
		}
		if !tailBounds[ck.Bound] || ck.Unit != "ns" {
			return "", false
		}
		need = min(need, ck.Limit)
		parts = append(parts, ck.String())
	}
	if len(parts) == 0 || hostMax < need {
		return "", false
	}
	return fmt.Sprintf("%s while the host woke up to %s late", strings.Join(parts, ", "), report.FormatNs(int64(hostMax))), true
}

// localFlow reports whether both ends of path's route share the
// controller's kernel: only then does the host probe time the machine the
// flow runs on. A path without a route is not local.
func localFlow(rack *fixtures.Rack, path Path) bool {
	from, to, _, err := Route(rack, path)
	return err == nil && onController(rack, from) && onController(rack, to)
}

// hostProbed runs f, with a host probe beside it when local, and returns
// what the probe saw (nil when not local). Blocks for f and, after it, up
// to ~100 ms for the probe to stop.
func hostProbed(ctx context.Context, local bool, f func()) *report.Histogram {
	if !local {
		f()
		return nil
	}
	probe := startHostProbe(ctx)
	f()
	return probe.stop()
}

// onController reports whether the named board shares the controller's
// kernel (fixtures.Board.OnController); unknown boards do not.
func onController(rack *fixtures.Rack, name string) bool {
	b, err := rack.Board(name)
	return err == nil && b.OnController()
}

// hostProbe runs WakeupFloor until stopped.
type hostProbe struct {
	cancel context.CancelFunc
	done   chan *report.Histogram
}

func startHostProbe(ctx context.Context) *hostProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &hostProbe{cancel: cancel, done: make(chan *report.Histogram, 1)}
	go func() {
		// n is only a ceiling (a day at 1 kHz); stop ends it.
		h, _ := WakeupFloor(ctx, hostProbePeriod, 86_400_000)
		p.done <- h
	}()
	return p
}

// stop ends the probe and returns what it saw (the probe checks for the
// end every 100 periods, so this blocks up to ~100 ms).
func (p *hostProbe) stop() *report.Histogram {
	p.cancel()
	return <-p.done
}
