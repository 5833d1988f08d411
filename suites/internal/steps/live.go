package steps

import (
	"sync"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report/live"
)

// windowSource is a running subscriber as the live feed reads it
// (rig.Endpoint): its buffered windows, taken without emptying them (the
// case is built from them when the flow ends), and its board.
type windowSource interface {
	Windows() []agentproto.Window
	Board() string
}

// feedLive exports each new agent window of subs to m as flow name while
// the flow runs, checking every period (the agents' window period, so a
// window shows up within about one window of closing), and calls ptp (if
// not nil) on every pass to export the boards' PTP state. stop does a
// last pass, so the final windows are exported too, and returns once the
// feeding goroutine has exited. With m nil it does nothing.
func feedLive(m *live.Metrics, name string, subs []windowSource, period time.Duration, ptp func(*live.Metrics)) (stop func()) {
	if m == nil || len(subs) == 0 {
		return func() {}
	}
	next := make([]uint64, len(subs)) // per subscriber: the first window index not yet exported
	pass := func() {
		if ptp != nil {
			ptp(m)
		}
		for i, s := range subs {
			for _, w := range s.Windows() {
				if w.Index < next[i] {
					continue
				}
				m.FlowWindow(s.Board(), name, &live.FlowWindow{Latency: w.Latency, Received: w.Received, Lost: w.Lost,
					SpanNs: w.EndNs - w.StartNs, CPUNs: w.CPUUserNs + w.CPUSysNs, RSSBytes: w.RSSBytes})
				next[i] = w.Index + 1
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(max(period, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				pass()
				return
			case <-t.C:
				pass()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// feedLive exports the gated boards' PTP lock state (the gate's tracker)
// and last polled offset to m.
func (g *ptpGate) feedLive(m *live.Metrics) {
	for _, b := range g.boards {
		locked, _, err := g.mon.Locked(b)
		if err != nil {
			continue
		}
		var offset time.Duration
		if series, err := g.mon.Series(b); err == nil && len(series) > 0 {
			last := series[len(series)-1]
			if last.Err != "" {
				// The last poll read nothing: no offset to show (a 0
				// would read as a perfect one).
				m.BoardPTPUnread(b)
				continue
			}
			offset = last.Offset
		}
		m.BoardPTP(b, locked, offset)
	}
}
