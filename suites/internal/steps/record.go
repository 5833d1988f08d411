package steps

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

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
	rel, rerr := filepath.Rel(env.ReportDir, st.Path)
	if rerr != nil {
		rel = st.Path
	}
	a := st.Note(rel)
	a.By = "steps.recordFlow"
	if agentDropped > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("recording: %d messages' stamps not kept by the agents (more than %d in a window)", agentDropped, RecordStamps))
	}
	return a, true
}

// RecordStamps is how many messages' stamps a subscriber keeps per
// window when ginkgo.config says `record: on` (agentproto.Start.Stamps):
// at 1 kHz and the default 1 s window, all of them.
const RecordStamps = 4096
