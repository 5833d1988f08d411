package timesync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// helperEnv makes the test binary act as a one-shot status reader (run as
// another uid by TestRealPTP4L/non-root).
const helperEnv = "HILRIG_TIMESYNC_DIAL_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		src, err := timesync.DialPTP4L(ctx, path, nil)
		if err == nil {
			_, err = src.Status(ctx)
			src.Close()
		}
		fmt.Printf("uid=%d err=%v\n", os.Getuid(), err)
		os.Exit(0)
	}
	code := m.Run()
	// Leak check: every rig must have deleted its namespaces.
	if names, err := netns.List(); err == nil {
		prefix := fmt.Sprintf("hlr%dn", os.Getpid()%100000)
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				fmt.Fprintf(os.Stderr, "LEAK: network namespace %s left behind\n", n)
				code = 1
			}
		}
	}
	os.Exit(code)
}

func TestDialNoSuchSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.sock")
	_, err := timesync.DialPTP4L(context.Background(), path, nil)
	if !errors.Is(err, timesync.ErrNoSocket) {
		t.Fatalf("err = %v, want ErrNoSocket", err)
	}
	for _, want := range []string{path, "is ptp4l running with uds_address " + path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestDialBadConfig(t *testing.T) {
	t.Parallel()
	if _, err := timesync.DialPTP4L(context.Background(), "", nil); !errors.Is(err, timesync.ErrBadConfig) {
		t.Errorf("empty path: err = %v, want ErrBadConfig", err)
	}
	if _, err := timesync.DialPTP4L(context.Background(), "/x", &timesync.PTP4LOptions{PHC: "maybe"}); !errors.Is(err, timesync.ErrBadConfig) || !strings.Contains(err.Error(), "PHC") {
		t.Errorf("bad PHC mode: err = %v, want ErrBadConfig naming PHC", err)
	}
}

// TestDialTimeout: a socket that never answers (bound, nobody reading)
// gives ErrTimeout naming the request and deadline, not a hang.
func TestDialTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mute.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	src, err := timesync.DialPTP4L(context.Background(), path, &timesync.PTP4LOptions{RequestTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	start := time.Now()
	_, err = src.Status(context.Background())
	if !errors.Is(err, timesync.ErrTimeout) || !strings.Contains(err.Error(), "PORT_PROPERTIES_NP") || !strings.Contains(err.Error(), "100ms") {
		t.Fatalf("err = %v, want ErrTimeout naming the request and deadline", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("timed out after %v, want about 100ms", el)
	}
	// ctx cancellation cuts a request short.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Status(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v, want context.Canceled", err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); !errors.Is(err, timesync.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := src.Status(context.Background()); !errors.Is(err, timesync.ErrClosed) {
		t.Errorf("Status after Close = %v, want ErrClosed", err)
	}
}

// pmcGet runs linuxptp's pmc against sock and returns, per TLV name, the
// key/value lines it printed.
func pmcGet(ctx context.Context, sock string, tlvs ...string) (map[string]map[string]string, string, error) {
	args := []string{"-u", "-b", "0", "-s", sock}
	for _, t := range tlvs {
		args = append(args, "GET "+t)
	}
	out, err := exec.CommandContext(ctx, "pmc", args...).CombinedOutput()
	if err != nil {
		return nil, string(out), fmt.Errorf("pmc: %w", err)
	}
	res := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && f[3] == "RESPONSE" && f[4] == "MANAGEMENT":
			cur = map[string]string{}
			res[f[5]] = cur
		case strings.HasPrefix(line, "sending:"):
			cur = nil
		case cur != nil && len(f) == 2:
			cur[f[0]] = f[1]
		}
	}
	for _, t := range tlvs {
		if res[t] == nil {
			return nil, string(out), fmt.Errorf("pmc printed no %s response", t)
		}
	}
	return res, string(out), nil
}

func requireRig(t *testing.T) {
	t.Helper()
	if err := ptprig.Available(); err != nil {
		t.Skipf("real ptp4l tests need root and linuxptp: %v", err)
	}
	if _, err := exec.LookPath("pmc"); err != nil {
		t.Skip("real ptp4l tests need pmc (apt-get install linuxptp)")
	}
}

// TestRealPTP4L runs one real grandmaster + slave (shared by the subtests,
// which run in order: each depends on the rig state the previous left).
func TestRealPTP4L(t *testing.T) {
	requireRig(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	t0 := time.Now()
	// GM first, as on a rack: with both started together the slave's lock
	// also waits for the GM's own 6–8 s announce receipt timeout.
	rig := startGMFirst(ctx, t)
	monSrc, err := timesync.DialPTP4L(ctx, rig.SlaveSocket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer monSrc.Close()
	const bound = 100 * time.Microsecond // software timestamping on a shared 2-core VM
	// The sim rack's policy: its free-running ptp4l grandmaster announces
	// clockClass 248, and the rack accepts 248 (fixtures/sim-rack.yaml).
	board := timesync.Board{Name: "slave", Source: monSrc, ExpectedGM: rig.GMIdentity,
		Policy: timesync.LockPolicy{GMClasses: []uint8{248}, MaxPathDelay: 100 * time.Microsecond}}
	mon, err := timesync.NewMonitor([]timesync.Board{board}, timesync.MonitorConfig{Bound: bound})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer mon.Stop()

	reqSrc, err := timesync.DialPTP4L(ctx, rig.SlaveSocket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reqSrc.Close()

	// A quiet host locks in about 10 s (two fresh offsets after the
	// servo's first measurements, see docs/timesync.md); 30 s leaves room
	// for a loaded 2-core host without hiding a lock that never comes.
	ok := t.Run("RequireLockedWithin30s", func(t *testing.T) {
		slaveStart := rig.Started(ptprig.Slave)
		rctx, rcancel := context.WithDeadline(ctx, slaveStart.Add(30*time.Second))
		defer rcancel()
		b := board
		b.Source = reqSrc
		err := timesync.RequireLocked(rctx, []timesync.Board{b}, bound, 2, nil)
		if err != nil {
			t.Fatalf("not locked 30 s after start: %v", err)
		}
		t.Logf("MEASURED time to lock (slave ptp4l start, GM already MASTER → 2 consecutive locked samples): %v (rig start → GM MASTER: %v)",
			time.Since(slaveStart).Round(10*time.Millisecond), slaveStart.Sub(t0).Round(10*time.Millisecond))
	})
	if !ok {
		t.FailNow()
	}

	t.Run("StatusMatchesPMC", func(t *testing.T) {
		tlvs := []string{"PORT_PROPERTIES_NP", "CURRENT_DATA_SET", "PARENT_DATA_SET", "TIME_STATUS_NP"}
		for attempt := 0; attempt < 10; attempt++ {
			a, err := reqSrc.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p, out, err := pmcGet(ctx, rig.SlaveSocket, tlvs...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			b, err := reqSrc.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if a.LastSyncIngress != b.LastSyncIngress || a.MeanPathDelay != b.MeanPathDelay {
				// A Sync (offset) or a Delay_Resp (path delay) landed
				// between the reads: values may differ legitimately.
				continue
			}
			pp, cur, par, ts := p["PORT_PROPERTIES_NP"], p["CURRENT_DATA_SET"], p["PARENT_DATA_SET"], p["TIME_STATUS_NP"]
			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s: ours %q, pmc %q\npmc output:\n%s", what, got, want, out)
				}
			}
			check("portState", a.PortState.String(), pp["portState"])
			check("portIdentity", a.ClockIdentity.String(), strings.Split(pp["portIdentity"], "-")[0])
			check("interface", a.Interface, pp["interface"])
			check("stepsRemoved", strconv.Itoa(int(a.StepsRemoved)), cur["stepsRemoved"])
			check("master_offset", strconv.FormatInt(int64(a.Offset), 10), ts["master_offset"])
			check("ingress_time", strconv.FormatInt(a.LastSyncIngress.Ns, 10), ts["ingress_time"])
			check("gmIdentity", a.GMIdentity.String(), ts["gmIdentity"])
			check("gmPresent", strconv.FormatBool(a.GMPresent), ts["gmPresent"])
			check("parentPortIdentity", a.ParentPort, par["parentPortIdentity"])
			check("grandmasterIdentity", a.GMIdentity.String(), par["grandmasterIdentity"])
			check("gm.ClockClass", strconv.Itoa(int(a.GMQuality.Class)), par["gm.ClockClass"])
			check("gm.ClockAccuracy", fmt.Sprintf("0x%02x", a.GMQuality.Accuracy), par["gm.ClockAccuracy"])
			check("gm.OffsetScaledLogVariance", fmt.Sprintf("0x%04x", a.GMQuality.Variance), par["gm.OffsetScaledLogVariance"])
			if a.GMQuality.Class != 248 {
				t.Errorf("grandmaster clockClass %d, want 248 (free-running ptp4l, gm.cfg)", a.GMQuality.Class)
			}
			if !a.PortEvents.Subscribed || !b.PortEvents.Subscribed {
				t.Errorf("no port-state subscription on a real ptp4l: %+v / %+v", a.PortEvents, b.PortEvents)
			}
			mpd, err := strconv.ParseFloat(cur["meanPathDelay"], 64)
			if err != nil {
				t.Fatalf("pmc meanPathDelay %q: %v", cur["meanPathDelay"], err)
			}
			if d := float64(a.MeanPathDelay) - mpd; d > 1 || d < -1 {
				t.Errorf("meanPathDelay: ours %v, pmc %.1f ns", a.MeanPathDelay, mpd)
			}
			if a.PortState != timesync.PortStateSlave || a.GMIdentity != rig.GMIdentity || a.ClockIdentity != rig.SlaveIdentity {
				t.Errorf("status %+v: want SLAVE following %s, own identity %s", a, rig.GMIdentity, rig.SlaveIdentity)
			}
			if a.LastSyncIngress.Clock != timesync.Realtime {
				t.Errorf("ingress clock %s, want realtime (software timestamping)", a.LastSyncIngress.Clock)
			}
			t.Logf("ours == pmc: state %s offset %v path delay %v gm %s ingress %d", a.PortState, a.Offset, a.MeanPathDelay, a.GMIdentity, a.LastSyncIngress.Ns)
			return
		}
		t.Fatal("a Sync landed between every pair of reads in 10 attempts; could not compare")
	})

	t.Run("NoPHCOnVeth", func(t *testing.T) {
		st, err := reqSrc.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.HasPHC || st.PHCNote == "" {
			t.Errorf("status from outside the namespace: HasPHC %t note %q; want no PHC with a reason", st.HasPHC, st.PHCNote)
		}
		var perr error
		_ = rig.Pair.B.Do(func() error { _, perr = timesync.PHCDevice(rig.SlaveIface); return nil })
		if !errors.Is(perr, timesync.ErrNoPHC) || !strings.Contains(perr.Error(), rig.SlaveIface) {
			t.Errorf("PHCDevice(veth) = %v, want ErrNoPHC naming %s", perr, rig.SlaveIface)
		}
		var serr error
		_ = rig.Pair.B.Do(func() error { _, serr = timesync.OpenPHC(rig.SlaveIface); return nil })
		if !errors.Is(serr, timesync.ErrNoPHC) {
			t.Errorf("OpenPHC(veth) = %v, want ErrNoPHC", serr)
		}
	})

	t.Run("NonRootReader", func(t *testing.T) {
		// The go test binary sits in a 0700 root dir: copy it where
		// nobody (uid 65534) may execute it.
		dir, err := os.MkdirTemp("", "hilrig-ts-helper-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "timesync.test")
		if err := copyFile(os.Args[0], bin); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+rig.SlaveSocket, "TMPDIR=/tmp")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		s := string(out)
		for _, want := range []string{"uid=65534", "permission denied", rig.SlaveSocket, "run as root"} {
			if !strings.Contains(s, want) {
				t.Errorf("non-root reader output %q lacks %q", s, want)
			}
		}
		t.Logf("non-root reader: %s", strings.TrimSpace(s))
	})

	var killedAt time.Time
	ok = t.Run("GMKillIsLossOfLockWithin8s", func(t *testing.T) {
		// Let the monitor record a few locked samples first (the window
		// check below needs them); poll with a deadline.
		testkit.Until(t, 10*time.Second, func() error {
			series, _ := mon.Series("slave")
			n := 0
			for _, s := range series {
				if s.Locked {
					n++
				}
			}
			if n < 4 {
				return fmt.Errorf("monitor has %d locked samples, want 4: %+v", n, series)
			}
			return nil
		})
		series, _ := mon.Series("slave")
		for _, s := range series {
			t.Logf("sample %s state %s offset %v delay %v ingress %d locked %t %s", s.At.Format("05.000"), s.State, s.Offset, s.PathDelay, s.Ingress, s.Locked, s.Cond)
		}
		drain(mon.Events())
		killedAt = time.Now()
		if err := rig.KillDaemon(ctx, ptprig.GM); err != nil {
			t.Fatal(err)
		}
		e, err := waitEvent(ctx, mon.Events(), killedAt.Add(8*time.Second), func(e timesync.Event) bool { return e.Kind == timesync.EventLockLost })
		if err != nil {
			t.Fatalf("no loss-of-lock within 8 s of killing the GM: %v", err)
		}
		t.Logf("MEASURED loss-of-lock detected %v after GM kill: %s (%s)", e.At.Sub(killedAt).Round(time.Millisecond), e.Verdict.Cond, e.Verdict.Detail)
		if e.Verdict.Cond != timesync.CondIngressStale && e.Verdict.Cond != timesync.CondNotSlave {
			t.Errorf("lost lock for %s, want ingress-stale or not-slave", e.Verdict.Cond)
		}
		// The window that spans the kill is not locked; one before it is.
		w, err := mon.Window(killedAt.Add(-time.Second), e.At)
		if err != nil {
			t.Fatal(err)
		}
		if w.Locked {
			t.Errorf("window across the GM kill reported locked: %+v", w)
		}
	})
	if !ok {
		t.FailNow()
	}

	// ptp4l pushes the slave's port state change after the GM's death
	// (SLAVE → LISTENING once the announce receipt timeout expires):
	// a reader's subscription sees it, whichever poll it falls between.
	t.Run("PortStateChangePushed", func(t *testing.T) {
		var ev timesync.PortEvents
		testkit.Until(t, 20*time.Second, func() error {
			st, err := reqSrc.Status(ctx)
			if err != nil {
				return err
			}
			if !st.PortEvents.Subscribed {
				return fmt.Errorf("not subscribed: %+v", st.PortEvents)
			}
			ev.Changes += st.PortEvents.Changes
			if ev.Changes == 0 {
				return fmt.Errorf("no port state change pushed yet (state %s)", st.PortState)
			}
			ev.First = st.PortEvents.First
			return nil
		})
		t.Logf("pushed after the GM kill: %d change(s), first to %s", ev.Changes, ev.First)
	})

	t.Run("LockedWindowBeforeKill", func(t *testing.T) {
		ev := mon.EventLog()
		var lockedAt time.Time
		for _, e := range ev {
			if e.Kind == timesync.EventLocked {
				lockedAt = e.At
				break
			}
		}
		if lockedAt.IsZero() {
			t.Fatalf("no locked event in %+v", ev)
		}
		series, _ := mon.Series("slave")
		var lastBefore time.Time
		var lo, hi time.Duration
		var n int
		for _, s := range series {
			if s.At.Before(killedAt) {
				lastBefore = s.At
			}
			if s.Locked {
				n++
				lo, hi = min(lo, s.Offset), max(hi, s.Offset)
			}
		}
		// Lock is known only at polls: the window from the first locked
		// poll to the last poll before the kill is fully locked.
		w, err := mon.Window(lockedAt, lastBefore, "slave")
		if err != nil {
			t.Fatal(err)
		}
		if !w.Locked || w.Bound <= 0 || w.Bound > bound {
			t.Errorf("window between lock and kill: %+v; want locked with 0 < bound ≤ %v", w, bound)
		}
		t.Logf("MEASURED offsets while locked: %d samples, range %v..%v, window bound %v, max path delay %v", n, lo, hi, w.Bound, w.Boards[0].MaxPathDelay)
	})

	t.Run("GMRestartIsRecovery", func(t *testing.T) {
		restartAt := time.Now()
		if err := rig.StartDaemon(ctx, ptprig.GM); err != nil {
			t.Fatal(err)
		}
		e, err := waitEvent(ctx, mon.Events(), restartAt.Add(25*time.Second), func(e timesync.Event) bool { return e.Kind == timesync.EventLocked })
		if err != nil {
			t.Fatalf("no recovery within 25 s of restarting the GM: %v", err)
		}
		if !e.Recovered {
			t.Errorf("locked event after restart not marked Recovered: %+v", e)
		}
		// ptp4l keeps the offset it measured before the kill until it
		// measures again, while the port is SLAVE and Syncs arrive: the
		// lock must rest on a new measurement, not on that value.
		series, _ := mon.Series("slave")
		var frozen time.Duration
		haveFrozen := false
		for _, s := range series {
			if s.At.After(killedAt) && s.Err == "" {
				frozen, haveFrozen = s.Offset, true
				break
			}
		}
		if !haveFrozen {
			t.Fatal("no sample read after the GM kill")
		}
		for _, s := range series {
			if s.At.After(restartAt) && s.Locked && s.Offset == frozen {
				t.Errorf("locked at %s on offset %v, the value frozen since the GM kill at %s (not a measurement)",
					s.At.Format("15:04:05.000"), s.Offset, killedAt.Format("15:04:05.000"))
			}
			if !e.At.Before(s.At) && s.At.After(restartAt) {
				t.Logf("sample %s state %s offset %v delay %v locked %t %s", s.At.Format("05.000"), s.State, s.Offset, s.PathDelay, s.Locked, s.Cond)
			}
		}
		t.Logf("MEASURED recovery %v after GM restart (frozen offset %v)", e.At.Sub(restartAt).Round(time.Millisecond), frozen)
	})

	t.Run("SlaveRestartReconnects", func(t *testing.T) {
		if err := rig.KillDaemon(ctx, ptprig.Slave); err != nil {
			t.Fatal(err)
		}
		_, err := reqSrc.Status(ctx)
		if !errors.Is(err, timesync.ErrNotListening) && !errors.Is(err, timesync.ErrNoSocket) && !errors.Is(err, timesync.ErrTimeout) {
			t.Errorf("status of a killed ptp4l: %v, want not-listening", err)
		}
		t.Logf("killed ptp4l reads as: %v", err)
		restartAt := time.Now()
		if err := rig.StartDaemon(ctx, ptprig.Slave); err != nil {
			t.Fatal(err)
		}
		// The same Source, without redialling by hand.
		st, err := reqSrc.Status(ctx)
		if err != nil {
			t.Fatalf("same Source after ptp4l restart: %v", err)
		}
		t.Logf("after slave restart: state %s", st.PortState)
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		b := board
		b.Source = reqSrc
		if err := timesync.RequireLocked(rctx, []timesync.Board{b}, bound, 2, nil); err != nil {
			t.Fatal(err)
		}
		t.Logf("MEASURED re-lock %v after slave restart (GM up)", time.Since(restartAt).Round(10*time.Millisecond))
	})
}

func drain(ch <-chan timesync.Event) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func waitEvent(ctx context.Context, ch <-chan timesync.Event, deadline time.Time, want func(timesync.Event) bool) (timesync.Event, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var seen []string
	for {
		select {
		case e := <-ch:
			if want(e) {
				return e, nil
			}
			seen = append(seen, fmt.Sprintf("%s(%s)", e.Kind, e.Verdict.Cond))
		case <-ctx.Done():
			return timesync.Event{}, fmt.Errorf("%w; events seen: %v", ctx.Err(), seen)
		}
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// startGMFirst starts a ptp4l grandmaster and then a slave (as on a
// rack: with both started together the slave's lock also waits for the
// GM's announce receipt timeout); it closes them when the test ends,
// logging both daemons' last lines if the test failed.
func startGMFirst(ctx context.Context, t *testing.T) *ptprig.Rig {
	t.Helper()
	rig, err := ptprig.Start(ctx, &ptprig.Options{GMFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gm log:\n%s\nslave log:\n%s", rig.Tail(ptprig.GM, 15), rig.Tail(ptprig.Slave, 15))
		}
		if err := rig.Close(); err != nil {
			t.Errorf("rig Close: %v", err)
		}
	})
	return rig
}
