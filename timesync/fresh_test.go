package timesync_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// recording is a real ptp4l slave's status read every 50 ms: fast enough
// to see ptp4l's every state, so replaying sub-series of it is polling
// it at any slower period and phase.
type recording struct {
	mu      sync.Mutex
	samples []reading
	cancel  context.CancelFunc
	done    chan struct{}
}

type reading struct {
	st  timesync.Status
	err error
}

const recordEvery = 50 * time.Millisecond

func record(ctx context.Context, src timesync.Source) *recording {
	ctx, cancel := context.WithCancel(ctx)
	r := &recording{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(recordEvery)
		defer tick.Stop()
		for {
			st, err := src.Status(ctx)
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			r.samples = append(r.samples, reading{st, err})
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

func (r *recording) snapshot() []reading {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reading(nil), r.samples...)
}

func (r *recording) stop() []reading {
	r.cancel()
	<-r.done
	return r.snapshot()
}

// waitRecorded polls the recording (every 100 ms) until cond holds, or
// fails the test after d.
func waitRecorded(t *testing.T, r *recording, d time.Duration, what string, cond func([]reading) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond(r.snapshot()) {
		if time.Now().After(deadline) {
			s := r.snapshot()
			last := "none"
			if n := len(s); n > 0 {
				last = fmt.Sprintf("%+v err %v", s[n-1].st, s[n-1].err)
			}
			t.Fatalf("%s: not within %v; last reading %s", what, d, last)
		}
		time.Sleep(100 * time.Millisecond) // poll interval of the wait, not synchronisation
	}
}

// freshness marks which readings after the fault carry an offset that
// ptp4l did not measure at its last Sync. ptp4l never clears
// TIME_STATUS_NP master_offset: the value F it holds at the fault stays
// until it measures again, while new Syncs move ingress_time on. So,
// until the offset changes, a reading is stale when its ingress_time is
// not the one F was measured at (the ingress of the first of the
// consecutive readings showing F). And a CURRENT_DATA_SET offset that
// differs from master_offset means ptp4l reset its data sets and has
// measured nothing since. faultIdx is the first successful reading after
// faultAt.
func freshness(rs []reading, faultAt time.Time) (stale []bool, frozen time.Duration, firstFresh int) {
	stale = make([]bool, len(rs))
	firstFresh = -1
	faultIdx := -1
	for i, r := range rs {
		if r.err == nil && r.st.ReadAt.After(faultAt) {
			faultIdx = i
			break
		}
	}
	if faultIdx < 0 {
		return stale, 0, -1
	}
	frozen = rs[faultIdx].st.Offset
	j0 := faultIdx
	for j0 > 0 && rs[j0-1].err == nil && rs[j0-1].st.Offset == frozen {
		j0--
	}
	measuredAt := rs[j0].st.LastSyncIngress.Ns
	changed := false
	for i := faultIdx; i < len(rs); i++ {
		r := rs[i]
		if r.err != nil {
			continue
		}
		if r.st.Offset != frozen {
			changed = true
		}
		stale[i] = (!changed && r.st.LastSyncIngress.Ns != measuredAt) || r.st.DataSetsReset()
		if changed && !stale[i] && firstFresh < 0 && r.st.PortState == timesync.PortStateSlave {
			firstFresh = i
		}
	}
	return stale, frozen, firstFresh
}

// replayLocks polls the recording as a Tracker would at period and phase
// (every reading at or after each tick), and returns the first locked
// verdict on a stale reading (or "" if none) and whether it locked on a
// fresh reading after the fault.
func replayLocks(rs []reading, stale []bool, gm timesync.ClockIdentity, faultAt time.Time, period, phase time.Duration) (violation string, relocked bool) {
	if len(rs) == 0 {
		return "", false
	}
	tr := timesync.NewTracker(gm, 100*time.Microsecond, nil)
	start := rs[0].st.ReadAt
	i := 0
	for k := 0; ; k++ {
		at := start.Add(phase + time.Duration(k)*period)
		for i < len(rs) && rs[i].st.ReadAt.Before(at) {
			i++
		}
		if i == len(rs) {
			return violation, relocked
		}
		r := rs[i]
		v := tr.Observe(r.st, r.err)
		if v.Locked && stale[i] && violation == "" {
			violation = fmt.Sprintf("period %v phase %v: locked at %s on offset %v (CURRENT_DATA_SET %v), state %s, path delay %v, ingress %d, not measured since the fault",
				period, phase, r.st.ReadAt.Format("15:04:05.000"), r.st.Offset, r.st.CurrentOffset, r.st.PortState, r.st.MeanPathDelay, r.st.LastSyncIngress.Ns)
		}
		if v.Locked && r.st.ReadAt.After(faultAt) && !stale[i] {
			relocked = true
		}
		i++
	}
}

// checkFreshLock replays the recording at the Monitor's and
// RequireLocked's default periods, at every phase the recording
// resolves: no poll schedule may call a stale offset locked, and every
// schedule must lock again once ptp4l measures again.
func checkFreshLock(t *testing.T, rs []reading, gm timesync.ClockIdentity, faultAt time.Time) {
	t.Helper()
	stale, frozen, firstFresh := freshness(rs, faultAt)
	if firstFresh < 0 {
		t.Fatalf("no fresh offset recorded after the fault (frozen %v)", frozen)
	}
	nStale := 0
	for i, s := range stale {
		if s && rs[i].st.PortState == timesync.PortStateSlave {
			nStale++
		}
	}
	t.Logf("fault at %s: frozen offset %v; %d readings in SLAVE state before ptp4l measured again; first fresh offset %v at %s",
		faultAt.Format("15:04:05.000"), frozen, nStale, rs[firstFresh].st.Offset, rs[firstFresh].st.ReadAt.Format("15:04:05.000"))
	var violations []string
	for _, period := range []time.Duration{timesync.DefaultRequirePeriod, timesync.DefaultPeriod} {
		for phase := time.Duration(0); phase < period; phase += recordEvery {
			v, relocked := replayLocks(rs, stale, gm, faultAt, period, phase)
			if v != "" {
				violations = append(violations, v)
			}
			if !relocked {
				t.Errorf("period %v phase %v: never locked again on a fresh offset after the fault", period, phase)
			}
		}
	}
	if len(violations) > 0 {
		t.Errorf("%d poll schedules called a stale offset locked; first: %s", len(violations), violations[0])
	}
}

// TestPTP4LLockNeedsAFreshOffset: after a cold start, a link flap and a
// grandmaster restart, ptp4l reports SLAVE with Syncs arriving while its
// offset is still the one from before the fault (or 0, never measured).
// A lock in those seconds would let a gate accept latency samples on a
// clock nobody measured. Each fault is recorded from a real ptp4l and
// replayed at every poll phase.
func TestPTP4LLockNeedsAFreshOffset(t *testing.T) {
	requireRig(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	rig := startGMFirst(ctx, t)
	src, err := timesync.DialPTP4L(ctx, rig.SlaveSocket, &timesync.PTP4LOptions{PHC: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	// recovered: ptp4l measured again and kept measuring for long enough
	// that every replayed schedule (3 polls at ≤ 1.25 s) can lock.
	recovered := func(faultAt time.Time) func([]reading) bool {
		return func(rs []reading) bool {
			_, _, first := freshness(rs, faultAt)
			return first >= 0 && rs[len(rs)-1].st.ReadAt.Sub(rs[first].st.ReadAt) > 6*time.Second
		}
	}
	// measuring: the slave reports SLAVE and fresh offsets.
	measuring := func(rs []reading) bool {
		n := len(rs)
		return n >= 2 && rs[n-1].err == nil && rs[n-1].st.PortState == timesync.PortStateSlave &&
			rs[n-1].st.Offset != rs[n-2].st.Offset && !rs[n-1].st.DataSetsReset()
	}
	since := func(d time.Duration) func([]reading) bool {
		return func(rs []reading) bool { return len(rs) > 0 && rs[len(rs)-1].st.ReadAt.Sub(rs[0].st.ReadAt) >= d }
	}
	// lastState: the latest reading is good and its port state passes ok.
	lastState := func(ok func(timesync.PortState) bool) func([]reading) bool {
		return func(rs []reading) bool {
			n := len(rs)
			return n > 0 && rs[n-1].err == nil && ok(rs[n-1].st.PortState)
		}
	}
	// inject applies one fault while rec runs, stopping rec before
	// failing t if the fault cannot be applied.
	inject := func(t *testing.T, rec *recording, fault error) {
		t.Helper()
		if fault != nil {
			rec.stop()
			t.Fatal(fault)
		}
	}
	// steadyThenFault waits (up to 20 s) for the slave to have measured
	// for 2 s, applies fault and returns when it did.
	steadyThenFault := func(t *testing.T, rec *recording, what string, fault func() error) time.Time {
		t.Helper()
		waitRecorded(t, rec, 20*time.Second, "slave measuring before the "+what, func(rs []reading) bool { return since(2*time.Second)(rs) && measuring(rs) })
		inject(t, rec, fault())
		return time.Now()
	}

	t.Run("ColdStart", func(t *testing.T) {
		if err := rig.KillDaemon(ctx, ptprig.Slave); err != nil {
			t.Fatal(err)
		}
		rec := record(ctx, src)
		faultAt := time.Now()
		inject(t, rec, rig.StartDaemon(ctx, ptprig.Slave))
		waitRecorded(t, rec, 40*time.Second, "slave measuring after a cold start", recovered(faultAt))
		checkFreshLock(t, rec.stop(), rig.GMIdentity, faultAt)
	})

	t.Run("LinkFlap", func(t *testing.T) {
		rec := record(ctx, src)
		faultAt := steadyThenFault(t, rec, "link flap", func() error { return rig.Pair.SetLink(ctx, false) })
		waitRecorded(t, rec, 10*time.Second, "slave FAULTY after link down",
			lastState(func(s timesync.PortState) bool { return s == timesync.PortStateFaulty }))
		inject(t, rec, rig.Pair.SetLink(ctx, true))
		waitRecorded(t, rec, 60*time.Second, "slave measuring after the link came back", recovered(faultAt))
		checkFreshLock(t, rec.stop(), rig.GMIdentity, faultAt)
	})

	t.Run("GMRestart", func(t *testing.T) {
		rec := record(ctx, src)
		faultAt := steadyThenFault(t, rec, "GM restart", func() error { return rig.KillDaemon(ctx, ptprig.GM) })
		// ptp4l notices the dead GM after its announce receipt timeout;
		// restart the GM once the slave has given it up, as in the field.
		waitRecorded(t, rec, 15*time.Second, "slave leaves SLAVE after the GM died",
			lastState(func(s timesync.PortState) bool { return s != timesync.PortStateSlave }))
		inject(t, rec, rig.StartDaemon(ctx, ptprig.GM))
		waitRecorded(t, rec, 60*time.Second, "slave measuring after the GM restart", recovered(faultAt))
		checkFreshLock(t, rec.stop(), rig.GMIdentity, faultAt)
	})
}
