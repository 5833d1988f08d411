package rig_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
)

// heapInUse is the live heap after a full collection, bytes.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestControllerMemoryBoundedAcrossWindows: a subscriber streaming a
// window (with its latency histogram) every 10 ms for 3 s sends ~300
// windows. Drained with TakeWindows, every window is seen once and the
// controller's live heap does not grow with the window count (the old
// rig kept every window: ~200 windows × ~200 KiB ≈ 40 MiB of growth
// between the two samples). The publisher, which nobody drains, keeps at
// most MaxWindows windows and counts the rest as dropped; both endpoints
// are released by their agents once their finals arrived.
func TestControllerMemoryBoundedAcrossWindows(t *testing.T) {
	rack, err := fixtures.SimRack()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const maxWin = 16
	r := openRig(ctx, t, rack, &rig.Options{Binary: hilrigBin, Build: deploy.BuildOptions{CacheDir: buildCache}, MaxWindows: maxWin})
	const rate, dur = 2000.0, 3 * time.Second
	spec := rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, RateHz: rate, Duration: dur, Window: 10 * time.Millisecond}}
	f, err := r.Flow(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	sub := f.Subscribers[0]
	var taken, received uint64
	var mid int64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
drain:
	for {
		ws := sub.TakeWindows()
		for _, w := range ws {
			received += w.Received
		}
		taken += uint64(len(ws))
		if mid == 0 && taken >= 60 {
			mid = heapInUse() // ~60 windows in: agents, buffers and pools are warm
		}
		select {
		case <-sub.Done():
			break drain
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	res, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range sub.TakeWindows() { // windows that arrived with the final
		received += w.Received
		taken++
	}
	end := heapInUse()
	runtime.KeepAlive(res)
	if mid == 0 {
		t.Fatalf("only %d windows arrived in %v at 10 ms: the test proves nothing", taken, dur)
	}
	if taken < 200 {
		t.Fatalf("%d windows taken, want ≥ 200 for a %v flow with 10 ms windows", taken, dur)
	}
	if taken != sub.WindowCount() || sub.DroppedWindows() != 0 {
		t.Errorf("taken %d of %d windows, %d dropped: a drained endpoint must hand over every window", taken, sub.WindowCount(), sub.DroppedWindows())
	}
	if received != res.Subscribers[0].Received {
		t.Errorf("windows add up to %d received, final says %d", received, res.Subscribers[0].Received)
	}
	growth := end - mid
	t.Logf("%d windows; live heap %.1f MiB after ~60 windows, %.1f MiB after all (growth %+.1f MiB)",
		taken, float64(mid)/(1<<20), float64(end)/(1<<20), float64(growth)/(1<<20))
	if growth > 8<<20 {
		t.Errorf("controller heap grew %.1f MiB over %d windows: windows are retained", float64(growth)/(1<<20), taken-60)
	}
	pub := f.Publisher
	if n := len(pub.Windows()); n > maxWin {
		t.Errorf("undrained publisher buffers %d windows, want ≤ MaxWindows %d", n, maxWin)
	}
	if pub.WindowCount() <= maxWin || pub.DroppedWindows() != pub.WindowCount()-uint64(len(pub.Windows())) {
		t.Errorf("publisher: %d windows, %d buffered, %d dropped", pub.WindowCount(), len(pub.Windows()), pub.DroppedWindows())
	}
	for _, b := range []string{"board-a", "board-b"} {
		a, err := r.Agent(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if n := a.Endpoints(); n != 0 {
			t.Errorf("agent on %s still tracks %d endpoints after their finals", b, n)
		}
	}
}
