package steps

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/caserec"
)

// recordFlow writes the recording of a measured flow when ginkgo.config
// says `record: on`: every subscriber's messages (their stamps, up to
// RecordStamps per window) and windows and, on a PTP-gated
// flow, each window's clock quality, in runs/<id>/recordings/ beside the
// run's report. It returns the case's reference to the file (or why
// there is none) and false when recording is off. Blocks on file I/O.
func recordFlow(env *Env, name string, run *Ran, g *gateOutcome) (report.Addition, bool) {
	if env.Config == nil || !env.Config.Record.On() || run.Result == nil {
		return report.Addition{}, false
	}
	path := filepath.Join(env.RunDir, "recordings", caserec.FileName(env.Suite, name))
	r, err := caserec.Create(path, caserec.Options{MaxBytes: int64(env.Config.RecordMaxBytes),
		Case: map[string]string{"suite": env.Suite, "name": name, "from": run.From, "to": run.To, "run": env.RunID}})
	if err != nil {
		return report.Noted("steps.recordFlow", "no recording: "+err.Error()), true
	}
	var agentDropped uint64
	for i, ws := range run.Result.Windows {
		sub := fmt.Sprintf("subscriber %d", i)
		if i < len(run.Result.Subscribers) && run.Result.Subscribers[i] != nil {
			sub = run.Result.Subscribers[i].Endpoint
		}
		if err == nil {
			err = r.Windows(sub, ws)
		}
		if err == nil {
			var d uint64
			d, err = r.Messages(sub, ws)
			agentDropped += d
		}
		if g == nil || g.judge == nil {
			continue
		}
		for k := range ws {
			if err != nil {
				break
			}
			// A window the monitor cannot judge has no PTP record; the
			// gate's own verdict says why.
			if q, qerr := g.judge.Window(time.Unix(0, ws[k].StartNs), time.Unix(0, ws[k].EndNs), g.boards...); qerr == nil {
				err = r.PTP(q)
			}
		}
	}
	st, cerr := r.Close()
	if err != nil || cerr != nil {
		return report.Noted("steps.recordFlow", fmt.Sprintf("recording %s failed: %v", st.Path, errors.Join(err, cerr))), true
	}
	a := reference(env, st, "steps.recordFlow")
	if agentDropped > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("recording: %d messages' stamps not kept by the agents (more than %d in a window)", agentDropped, RecordStamps))
	}
	return a, true
}

// RecordStamps is how many messages' stamps a subscriber keeps per
// window when ginkgo.config says `record: on` (agentproto.Start.Stamps):
// at 1 kHz and the default 1 s window, all of them.
const RecordStamps = 4096

// RecordEdges writes the GPIO edges s's gpio-capture took for case c (the
// markers' tx and rx edges) when ginkgo.config says `record: on`, in
// runs/<id>/recordings/<suite>_<case>_gpio.mcap (/hilrig/gpio: channel,
// line, direction, Unix ns), and adds the reference to c. Edges stamped on
// CLOCK_MONOTONIC are mapped to CLOCK_REALTIME by one pair of clock reads
// taken now (the controller's: a gpio-capture runs on it). Nothing when
// recording is off or s is not a gpio-capture. Call after the capture
// settled and before harness.Record. Blocks on file I/O.
func RecordEdges(env *Env, s *Scope, c *report.Case) {
	if env.Config == nil || !env.Config.Record.On() || s == nil || s.Capture == nil {
		return
	}
	wall, mono := time.Now().UnixNano(), monoclock.Now()
	chans := map[int]int{} // line → channel
	for ch, line := range s.Capture.Channels() {
		chans[line] = ch
	}
	var edges []caserec.Edge
	var other int
	for _, e := range s.Capture.Edges(nil) {
		t := e.TimestampNs
		switch e.Clock {
		case gpio.ClockMonotonic:
			t = wall - (mono - e.TimestampNs)
		case gpio.ClockRealtime:
		default:
			other++
		}
		edges = append(edges, caserec.Edge{Channel: chans[e.Line], Line: e.Line, Rising: e.Rising, TimeNs: t, Seqno: e.Seqno, LineSeqno: e.LineSeqno})
	}
	path := filepath.Join(env.RunDir, "recordings", caserec.FileName(env.Suite, c.Name+" gpio"))
	r, err := caserec.CreateEdges(path, caserec.Options{MaxBytes: int64(env.Config.RecordMaxBytes),
		Case: map[string]string{"suite": env.Suite, "name": c.Name, "run": env.RunID}})
	if err != nil {
		c.Add(report.Noted("steps.RecordEdges", "no GPIO recording: "+err.Error()))
		return
	}
	err = r.Edges(edges)
	st, cerr := r.Close()
	if err != nil || cerr != nil {
		c.Add(report.Noted("steps.RecordEdges", fmt.Sprintf("GPIO recording %s failed: %v", st.Path, errors.Join(err, cerr))))
		return
	}
	a := reference(env, st, "steps.RecordEdges")
	if other > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("GPIO recording: %d edges stamped on neither CLOCK_MONOTONIC nor CLOCK_REALTIME, recorded as stamped", other))
	}
	c.Add(a)
}

// reference is a case's note naming its recording st, by path relative
// to the report directory (where the run's result and HTML are).
func reference(env *Env, st caserec.Stats, by string) report.Addition {
	rel, err := filepath.Rel(env.ReportDir, st.Path)
	if err != nil {
		rel = st.Path
	}
	a := st.Note(rel)
	a.By = by
	return a
}
