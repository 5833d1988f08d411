package soakrun

import (
	"time"

	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/timesync"
)

// MonitorPTP answers PTPSource from a running timesync.Monitor. Boards
// maps a soak agent to the monitor's board name (same name when absent).
type MonitorPTP struct {
	M      *timesync.Monitor
	Boards map[string]string
	// Wait bounds how long Sample waits for the first poll at or after the
	// window's end (lock is only known at polls; default 2 × the default
	// poll period).
	Wait time.Duration
}

// Sample is the board's state over [from, to]: locked when every poll
// that brackets and fills the window was locked, its largest |offset|,
// and the last polled state and offset.
func (p MonitorPTP) Sample(agent string, from, to time.Time) *soak.PTPSample {
	b := agent
	if n, ok := p.Boards[agent]; ok {
		b = n
	}
	// The lock state up to `to` is known once a poll at or after it
	// exists; wait for it (bounded) instead of calling the window
	// uncovered, which would mark every window unlocked.
	wait := p.Wait
	if wait <= 0 {
		wait = 2 * timesync.DefaultPeriod
	}
	deadline := time.Now().Add(wait)
	for {
		series, err := p.M.Series(b)
		if err == nil && len(series) > 0 && !series[len(series)-1].At.Before(to) {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // poll interval for the monitor's next sample
	}
	w, err := p.M.Window(from, to, b)
	if err != nil || len(w.Boards) == 0 {
		return &soak.PTPSample{Locked: false, State: "unknown"}
	}
	s := &soak.PTPSample{Locked: w.Locked, MaxAbsOffsetNs: int64(w.Boards[0].MaxAbsOffset)}
	if series, err := p.M.Series(b); err == nil {
		for i := len(series) - 1; i >= 0; i-- {
			if !series[i].At.After(to) {
				s.State, s.OffsetNs = series[i].State.String(), int64(series[i].Offset)
				break
			}
		}
	}
	return s
}
