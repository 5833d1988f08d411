package soakrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/dut/duttest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// dutRack has the IMU example on a local board, without its GPIO line:
// the soak needs only its topics.
const dutRack = `name: t
boards:
  - {name: a, reach: local}
duts:
  - name: imu
    board: a
    build: ./dut/examples/imu
    command: [imu]
    inputs:
      - {name: imu, topic: dut/imu}
    outputs:
      - {name: cmd, topic: dut/cmd}
    correlation: {mode: echo, input: imu, output: cmd, offset: 0, deadline: 4ms}
    stimulus: {rate_hz: 100, count: 100}
    bounds: {max_miss_rate: 0.1}
`

// A killed program during a short dut soak is restarted by its
// supervisor and counted: one fault window carrying its exit and output
// tail, within the soak's fault budget, and the program answers again
// in the windows after it. The real IMU example on a local board (built
// by dut.Start).
func TestDUTSoakCountsAKilledProgramAsAFaultWindow(t *testing.T) {
	rack, err := fixtures.ParseRack("t.yaml", []byte(dutRack))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := rack.DUT("imu")
	pl := dut.Placement{Domain: fmt.Sprintf("dutsoak%d", os.Getpid())}
	duttest.RemoveSegmentsAtEnd(t, pl.Domain)
	p, err := dut.Start(t.Context(), rack, "imu", pl, &dut.Options{OutputDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })

	budget := 2
	base := &soakrun.Plan{Duration: 3 * time.Second, Window: 300 * time.Millisecond, Recoveries: budget,
		Bounds: soak.Bounds{MaxFaultWindows: &budget}}
	plan := base.ForDUT(d)
	if *plan.Bounds.MaxLost != 30 {
		t.Errorf("max lost %d, want 30 (10%% of 3 s at 100 Hz)", *plan.Bounds.MaxLost)
	}
	path := filepath.Join(t.TempDir(), "dut.jsonl")
	cp, err := soak.Create(path, soak.Header{Name: "dut", Window: plan.Window, Bounds: &plan.Bounds})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	killed := -1
	var killErr error
	run := &soakrun.Runner{Name: "dut", Window: plan.Window, Progress: time.Hour, Until: time.Now().Add(plan.Duration),
		Checkpoint: cp, Bounds: plan.Bounds, OnWindow: func(w *soak.Window) {
			if w.Index == 2 { // the runner goroutine: a crash mid-soak
				killed, killErr = w.Index, p.Kill()
			}
		}}
	feed, tracks := soakrun.StartDUT(t.Context(), p, pl, plan, run.Until, run.Stop)
	t.Cleanup(feed.Close)
	run.Finisher, run.Faults = feed, feed
	if err := run.Run(t.Context(), tracks); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, p.OutputTail(20))
	}
	if killed < 0 || killErr != nil {
		t.Fatalf("not killed (window %d): %v", killed, killErr)
	}
	lg := readLog(t, path)
	v := soak.Judge(lg, plan.Bounds)
	if p.Restarts() != 1 || run.Status().Crashes != 1 || v.FaultWindows != 1 {
		t.Fatalf("restarts %d, crashes counted %d, fault windows %d: want 1 each", p.Restarts(), run.Status().Crashes, v.FaultWindows)
	}
	f := v.Faults[0]
	if f.Board != "a" || !strings.Contains(f.Cause, "dut imu ended (signal: killed)") || !strings.Contains(f.Recovery, "restarted by its supervisor") ||
		f.Console == "" || f.To.Before(f.From) {
		t.Errorf("fault %+v", f)
	}
	for _, ck := range v.Checks {
		if strings.HasPrefix(ck.Bound, "fault windows") && (ck.Measured != 1 || ck.Verdict != "pass") {
			t.Errorf("fault-window check %v", ck)
		}
	}
	// The stream's stimuli add up, and it answered after the fault.
	var faultAt int
	var sent, answered, missed, after int64
	var rss int64
	for i, w := range lg.Windows {
		if w.Fault != nil {
			faultAt = i
		}
		for _, a := range w.Agents {
			if a.Agent != feed.Agent {
				t.Fatalf("window %d: agent %q, want only %q", w.Index, a.Agent, feed.Agent)
			}
			rss = max(rss, a.RSSBytes)
			for _, s := range a.Streams {
				if s.Stream != feed.Stream {
					t.Errorf("stream %q", s.Stream)
				}
				sent, answered, missed = sent+s.Sent, answered+s.Delivered, missed+s.Lost
				if faultAt > 0 && i > faultAt {
					after += s.Delivered
				}
			}
		}
	}
	if sent == 0 || sent != answered+missed || after == 0 || rss <= 0 {
		t.Errorf("sent %d, answered %d, missed %d, answered after the fault %d, max RSS %d", sent, answered, missed, after, rss)
	}
}

// faults is a FaultSource handing out its faults once.
type faults struct{ fs []soak.Fault }

func (f *faults) TakeFaults() []soak.Fault {
	out := f.fs
	f.fs = nil
	return out
}

// Two faults taken in one window make it one fault window naming both.
func TestRunnerFaultSourceClosesOneFaultWindow(t *testing.T) {
	cp, path := newCheckpoint(t, soak.Header{Name: "unit", Window: 50 * time.Millisecond})
	t0 := time.Now()
	fs := &faults{fs: []soak.Fault{
		{Board: "a", Cause: "dut x ended (signal: killed)", From: t0, To: t0.Add(time.Millisecond), Recovery: "restart 1", Console: "one"},
		{Board: "a", Cause: "dut x ended (exit status 2)", From: t0.Add(2 * time.Millisecond), To: t0.Add(3 * time.Millisecond), Recovery: "restart 2", Console: "two"},
	}}
	syn := soakrun.NewSynth(500, 20e3, 1)
	r := &soakrun.Runner{Name: "unit", Window: 50 * time.Millisecond, Progress: time.Hour, Until: time.Now().Add(200 * time.Millisecond),
		Checkpoint: cp, Faults: fs}
	err := r.Run(context.Background(), []*soakrun.Track{
		{Agent: "b", Flow: "imu", Role: agentproto.Subscriber, Src: syn.Sub()},
		{Agent: "a", Flow: "imu", Role: agentproto.Publisher, Src: syn.Pub()},
	})
	if err != nil {
		t.Fatal(err)
	}
	lg := readLog(t, path)
	v := soak.Judge(lg, soak.Bounds{})
	if v.FaultWindows != 1 || r.Status().Crashes != 2 || lg.Windows[0].Fault == nil {
		t.Fatalf("fault windows %d, crashes %d, first window's fault %v", v.FaultWindows, r.Status().Crashes, lg.Windows[0].Fault)
	}
	f := v.Faults[0]
	if f.Cause != "dut x ended (signal: killed); dut x ended (exit status 2)" || f.Console != "one\ntwo" || !f.To.Equal(t0.Add(3*time.Millisecond)) {
		t.Errorf("merged fault %+v", f)
	}
	if !strings.Contains(r.Status().String(), "crashes restarted 2") {
		t.Errorf("status %q", r.Status())
	}
}

// -hilrig.soak-dut selects the dut of the long soak, and only with a
// long profile: the smoke form soaks every dut anyway.
func TestSelectLongDUT(t *testing.T) {
	setFlags(t, map[string]string{"hilrig.soak-profile": soakrun.ProfileAccelerated, "hilrig.soak-dut": "imu"})
	if s := soakrun.Select("sim"); s.Long != soakrun.ProfileAccelerated || s.LongDUT != "imu" || s.Smoke {
		t.Errorf("accelerated on dut imu: %+v", s)
	}
	setFlags(t, map[string]string{"hilrig.soak-profile": soakrun.ProfileSmoke})
	if s := soakrun.Select("sim"); s.Long != "" || s.LongDUT != "" || !s.Smoke {
		t.Errorf("smoke with -hilrig.soak-dut: %+v", s)
	}
}
