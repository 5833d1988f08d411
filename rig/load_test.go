package rig_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/rig"
)

// TestSimRackFlowUnderLoad: a load of one thread per CPU of board-b runs
// for the life of a short shm flow a→b; the flow loses nothing, the load
// reports as many threads as board-b's agent has CPUs, each with CPU time,
// and the rig's Stop returns its final.
func TestSimRackFlowUnderLoad(t *testing.T) {
	r := openSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := r.Load(ctx, rig.LoadSpec{Board: "board-b", Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Agent(ctx, "board-b")
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 1024, Count: 500, RateHz: 1000, Window: 100 * time.Millisecond}})
	if err != nil {
		_, _ = l.Stop(ctx)
		t.Fatal(err)
	}
	res, ferr := f.Wait(ctx)
	fin, lerr := l.Stop(ctx)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if lerr != nil {
		t.Fatal(lerr)
	}
	checkZeroLoss(t, res, 500)
	rep := fin.Load
	if fin.Reason != agentproto.EndStopped || rep.Threads != a.Hello.NumCPU || len(rep.ThreadCPUNs) != rep.Threads {
		t.Errorf("load final = %+v report %+v, want stopped with %d threads", fin, rep, a.Hello.NumCPU)
	}
	for i, c := range rep.ThreadCPUNs {
		if c <= 0 {
			t.Errorf("load thread %d consumed %d ns", i, c)
		}
	}
	share := rig.LoadShare(fin)
	if share <= 0 || share > 1.05 {
		t.Errorf("load share %.2f, want in (0, 1]", share)
	}
	t.Logf("load of %d threads on board-b: %.0f%% of its cores over %v", rep.Threads, 100*share, time.Duration(rep.WallNs))
}

// TestLoadNeedsBoard: a load without a board is refused before anything
// starts.
func TestLoadNeedsBoard(t *testing.T) {
	r := openSim(t)
	if _, err := r.Load(context.Background(), rig.LoadSpec{}); err == nil {
		t.Fatal("Load without a board succeeded")
	}
}
