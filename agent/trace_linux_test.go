package agent_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/tracing/tracetest"
)

// An induced spike — a 5 ms SCHED_FIFO hog on the subscriber's CPU while
// messages flow at 1 kHz — breaks the 2 ms max bound; the breaching
// windows carry kernel traces (the first taken at once, not at the
// window flush), the JSON is trace-event format with scheduler slices,
// and the final carries counters and the page sizes of the shared-memory
// mappings. On a loaded machine the worst message of a window is often
// late for another reason than the hog, so whether a snapshot names the
// hog is logged here; the strict "names the hog" check is
// tracing.TestSpikeSnapshotNamesHog, free of the agent's Go scheduling.
func TestTraceOnBreachNamesHog(t *testing.T) {
	testkit.NeedRoot(t, "tracefs and SCHED_FIFO need root")
	recvCPU, sendCPU := 0, 0
	if runtime.NumCPU() > 1 {
		recvCPU = 1
	}
	dir := t.TempDir()
	s := startSession(t, dir)
	spec := &agentproto.TraceSpec{Mode: agentproto.TraceOnBreach, BufferKB: 1024, CPUs: []int{sendCPU, recvCPU}, MaxNs: int64(2 * time.Millisecond)}
	c := contract("trace/t")
	s.start(agentproto.Start{Endpoint: "sub", Role: agentproto.Subscriber, Domain: "trace", Contract: c,
		CPU: &recvCPU, Priority: 5, Count: 3000, WindowNs: int64(100 * time.Millisecond), Trace: spec})
	s.start(agentproto.Start{Endpoint: "pub", Role: agentproto.Publisher, Domain: "trace", Contract: c,
		CPU: &sendCPU, Priority: 5, Payload: 64, Count: 3000, RateHz: 1000, WindowNs: int64(100 * time.Millisecond), Trace: spec})

	var snaps []*agentproto.TraceSnapshot
	var subFinal *agentproto.Final
	// The hog is the inducer, not the subject. Once in ~15 runs on the
	// 2-vCPU dev VM (CI included) a 5 ms hog delays no message past the
	// bound: every window's max stayed under 1 ms, so the tracer was never
	// asked for a snapshot, and the test used to fail as if the tracer had
	// missed one. A hog whose windows did not break the bound is fired
	// again, every 5th window, up to hogAttempts times; the test fails when
	// no window broke the bound (saying so), and when the first window
	// that broke it, by the hog or by load, carries no snapshot.
	const hogAttempts = 5
	windows, hogs, hogsDone := 0, 0, 0
	firstBreach := -1
	var firstBreachTraced bool
	type hogResult struct {
		end int64
		err error
	}
	hogEnd := make(chan hogResult, hogAttempts)
	var hogFrom, hogTo int64
	hogRunning, pubDone := false, false
	deadline := time.After(30 * time.Second)
	// Both finals: the publisher's can come after the subscriber's, and
	// then arrived where the Stop below expected its bye.
	for subFinal == nil || !pubDone {
		select {
		case r := <-hogEnd:
			hogsDone++
			hogRunning = false
			if r.err != nil {
				t.Errorf("hog: %v", r.err)
			}
			hogTo = r.end
		case m, ok := <-s.msgs:
			if !ok {
				t.Fatal("agent output ended")
			}
			switch {
			case m.Kind == agentproto.KindWindow && m.Window.Endpoint == "sub":
				windows++
				if m.Window.Trace != nil {
					snaps = append(snaps, m.Window.Trace)
				}
				if lat := m.Window.Latency; firstBreach < 0 && lat != nil && lat.ValueAtQuantile(100) > spec.MaxNs {
					firstBreach, firstBreachTraced = int(m.Window.Index), m.Window.Trace != nil
				}
				// The first hog after the first window, always (a window
				// that broke the bound before it, under load, is traced
				// too); again only while no window has broken it.
				if (hogs == 0 && windows == 1) || (firstBreach < 0 && !hogRunning && hogs < hogAttempts && windows%5 == 1) {
					hogs++
					hogRunning = true
					hogFrom = monoNow()
					w, err := tracetest.StartHog(recvCPU, 5*time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					go func() {
						err := w()
						hogEnd <- hogResult{monoNow(), err}
					}()
				}
			case m.Kind == agentproto.KindFinal && m.Final.Endpoint == "sub":
				subFinal = m.Final
			case m.Kind == agentproto.KindFinal && m.Final.Endpoint == "pub":
				pubDone = true
			case m.Kind == agentproto.KindError:
				t.Fatalf("agent error %+v", m.Error)
			}
		case <-deadline:
			t.Fatal("no subscriber and publisher finals within 30s")
		}
	}
	for ; hogsDone < hogs; hogsDone++ {
		if r := <-hogEnd; r.err != nil {
			t.Errorf("hog: %v", r.err)
		} else {
			hogTo = r.end
		}
	}
	if hogs == 0 {
		t.Fatal("the run ended before the hog started")
	}
	if firstBreach < 0 {
		t.Fatalf("%d hogs of 5 ms on CPU %d delayed no message past the 2 ms bound in %d windows: the inducer failed, the tracer was never asked", hogs, recvCPU, windows)
	}
	t.Logf("%d hog(s); the first window over the bound: %d", hogs, firstBreach)
	if !firstBreachTraced {
		t.Errorf("window %d broke the 2 ms bound but carries no trace snapshot", firstBreach)
	}
	s.stop()

	if len(snaps) == 0 {
		t.Fatalf("no snapshot in %d windows although the hog delayed messages by ~5ms", windows)
	}
	full, named := 0, 0
	for _, sn := range snaps {
		t.Logf("snapshot (%s, %d bytes JSON): %.300s", sn.Reason, len(sn.Chrome), sn.Summary)
		if !strings.Contains(sn.Reason, "> bound 2.00ms") || sn.BufferKB != 1024 || sn.Method == "" || !strings.HasPrefix(sn.Summary, "while seq ") {
			t.Errorf("snapshot reason %q buffer %d method %q summary %q", sn.Reason, sn.BufferKB, sn.Method, sn.Summary)
		}
		var doc struct {
			TraceEvents []struct {
				Name string `json:"name"`
				Ph   string `json:"ph"`
			} `json:"traceEvents"`
		}
		if err := json.Unmarshal(sn.Chrome, &doc); err != nil {
			t.Fatalf("trace-event JSON: %v", err)
		}
		var hogSlice, sched bool
		for _, e := range doc.TraceEvents {
			hogSlice = hogSlice || (e.Ph == "X" && e.Name == tracetest.HogComm)
			sched = sched || e.Ph == "X"
		}
		if sched && !strings.Contains(sn.Summary, "partial account") {
			full++
		}
		if hogSlice && strings.Contains(sn.Summary, tracetest.HogComm) {
			named++
		}
	}
	// On a loaded machine a later snapshot can come too late for the
	// bounded buffer (it then says "partial account"); the first breach
	// is snapshotted at once and must hold the window.
	if full == 0 {
		t.Errorf("no snapshot holds its window (%d snapshots)", len(snaps))
	}
	t.Logf("hog %d..%d; %d of %d snapshots name %s", hogFrom, hogTo, named, len(snaps), tracetest.HogComm)
	ctr := subFinal.Counters
	if ctr == nil || ctr.Method == "" || ctr.VoluntaryCtxSwitches == 0 {
		t.Fatalf("subscriber counters %+v", ctr)
	}
	var seg bool
	for _, m := range ctr.Mappings {
		seg = seg || (strings.HasPrefix(m.Path, dir) && m.KernelPageSizeKB > 0 && m.Words != "")
	}
	if !seg {
		t.Errorf("no shm segment under %s in the mappings: %+v", dir, ctr.Mappings)
	}
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
