package lease_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig/lease"
)

// A child controller (this test binary re-executed): on "go" from stdin
// it acquires the lease, prints "won" or "held: ...", and holds the lease
// until stdin closes.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HILRIG_LEASE_CHILD"); dir != "" {
		if os.Getenv("HILRIG_LEASE_CHILD_PROC") != "" {
			if err := mountOwnProc(); err != nil {
				fmt.Println("mount /proc:", err)
				os.Exit(1)
			}
		}
		in := bufio.NewReader(os.Stdin)
		if _, err := in.ReadString('\n'); err != nil {
			os.Exit(1)
		}
		d := &lease.Dir{Path: dir}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := d.Acquire(ctx, lease.Self("rack1", "child"))
		if err != nil {
			fmt.Println("held:", err)
		} else {
			fmt.Println("won")
		}
		_, _ = io.Copy(io.Discard, in)
		if l != nil {
			_ = l.Release(ctx)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startChild(t *testing.T, dir string) *testkit.Child {
	t.Helper()
	return startChildIn(t, dir, false)
}

// startChildIn starts a child controller; with newPIDNS it runs as pid 1
// of a new PID namespace with its own /proc (a container's view).
func startChildIn(t *testing.T, dir string, newPIDNS bool) *testkit.Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HILRIG_LEASE_CHILD="+dir)
	if newPIDNS {
		cmd.Env = append(cmd.Env, "HILRIG_LEASE_CHILD_PROC=1")
		cmd.SysProcAttr = pidNamespace()
	}
	return testkit.StartChild(t, cmd)
}

func TestTwoControllersRaceExactlyOneWins(t *testing.T) {
	dir := t.TempDir()
	for round := range 5 {
		a, b := startChild(t, dir), startChild(t, dir)
		// Both are blocked on stdin: release them together.
		a.Send(t, "go")
		b.Send(t, "go")
		ra, rb := a.Line(t), b.Line(t)
		won := 0
		for _, r := range []string{ra, rb} {
			if r == "won" {
				won++
			} else if !strings.Contains(r, "is held by child (pid ") {
				t.Errorf("round %d: loser says %q, want the holder named", round, r)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %q and %q: want exactly one winner", round, ra, rb)
		}
		// The winner releases when its stdin closes.
		a.CloseInput()
		b.CloseInput()
		_ = a.Cmd.Wait()
		_ = b.Cmd.Wait()
		st, err := (&lease.Dir{Path: dir}).Status(context.Background(), "rack1")
		if err != nil || st.Held {
			t.Fatalf("round %d: after release: %s, %v", round, show(st), err)
		}
	}
}

func TestKilledHolderIsReclaimed(t *testing.T) {
	dir := t.TempDir()
	d := &lease.Dir{Path: dir}
	ctx := context.Background()
	c := startChild(t, dir)
	if r := c.Ask(t, "go"); r != "won" {
		t.Fatalf("child: %s", r)
	}
	pid := c.Cmd.Process.Pid
	if _, err := d.Acquire(ctx, lease.Self("rack1", "me")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire while the child holds it: %v", err)
	}
	st, err := d.Status(ctx, "rack1")
	if err != nil || !st.Held || st.Stale || st.PID != pid {
		t.Fatalf("status while held: %s, %v", show(st), err)
	}
	if err := c.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	st, err = d.Status(ctx, "rack1")
	if err != nil || !st.Held || !st.Stale {
		t.Fatalf("status after the holder was killed: %s, %v: want held and stale", show(st), err)
	}
	l, err := d.Acquire(ctx, lease.Self("rack1", "me"))
	if err != nil {
		t.Fatal(err)
	}
	if l.TookOver == nil || l.TookOver.PID != pid || l.TookOver.Holder != "child" {
		t.Fatalf("took over %+v, want the killed child's lease (pid %d)", l.TookOver, pid)
	}
	if err := d.Release(ctx, "rack1", os.Getpid()+1, false); !errors.Is(err, lease.ErrNotHeld) {
		t.Errorf("release by another pid: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReusedPIDIsStale: a lease file whose holder is gone is stale even
// when its pid now names a live process (the kernel reused it: here, this
// very process), and a lease is live while its holder holds it whatever
// pid and start time it records.
func TestReusedPIDIsStale(t *testing.T) {
	d := &lease.Dir{Path: t.TempDir()}
	ctx := context.Background()
	who := lease.Self("rack1", "old")
	who.Start = 1
	b, err := json.Marshal(who)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "rack1.lease"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := d.Acquire(ctx, lease.Self("rack1", "new"))
	if err != nil || l.TookOver == nil || l.TookOver.Holder != "old" {
		t.Fatalf("acquire over a lease whose pid was reused: %v, %+v", err, l)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	gone := lease.Self("rack1", "held")
	gone.PID, gone.Start = 1<<22+1, 1 // no such process
	l, err = d.Acquire(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Acquire(ctx, lease.Self("rack1", "new")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire while held (the recorded pid is no process): %v, want ErrHeld", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestBadRackName(t *testing.T) {
	d := &lease.Dir{Path: t.TempDir()}
	if _, err := d.Acquire(context.Background(), lease.Self("../etc", "x")); err == nil || !strings.Contains(err.Error(), `"../etc"`) {
		t.Fatalf("bad name: %v", err)
	}
}

// TestLeaseFileFormat: the start time stays a JSON string on disk (lease
// files written before it was decoded into a number are read alike), a
// file naming this live process is held and not stale, and a start that is
// not a number makes the lease stale rather than locking the rack.
func TestLeaseFileFormat(t *testing.T) {
	d := &lease.Dir{Path: t.TempDir()}
	ctx := context.Background()
	who := lease.Self("rack1", "me")
	if who.Start == 0 {
		t.Skip("no process start time on this system")
	}
	l, err := d.Acquire(ctx, who)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.Path, "rack1.lease"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`"start": "%d"`, who.Start); !strings.Contains(string(b), want) {
		t.Fatalf("lease file %s lacks %s", b, want)
	}
	st, err := d.Status(ctx, "rack1")
	if err != nil || !st.Held || st.Stale || st.Start != who.Start {
		t.Fatalf("status of this process's lease: %s, %v; want held, not stale, start %d", show(st), err, who.Start)
	}
	bad := strings.Replace(string(b), fmt.Sprintf(`"%d"`, who.Start), `"soon"`, 1)
	if err := os.WriteFile(filepath.Join(d.Path, "rack1.lease"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	// Liveness is the holder's lock, not the file's content: a live
	// holder stays live; once it is gone the file cannot lock the rack.
	if st, err := d.Status(ctx, "rack1"); err != nil || !st.Held || st.Stale {
		t.Fatalf("status with start %q while held: %s, %v; want held, not stale", "soon", show(st), err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "rack1.lease"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx, "rack1"); err != nil || !st.Held || !st.Stale {
		t.Fatalf("status with start %q, no holder: %s, %v; want held and stale", "soon", show(st), err)
	}
	if l, err := d.Acquire(ctx, lease.Self("rack1", "me")); err != nil || l.TookOver == nil {
		t.Fatalf("acquire over an unreadable lease file: %v, %+v", err, l)
	}
}

// show formats a Status with its flags (its Info's String hides them).
func show(st lease.Status) string {
	return fmt.Sprintf("{%s held=%v stale=%v}", st.Info, st.Held, st.Stale)
}

// TestGroupSharesTheLease: leases of one Group (the processes of one test
// run) share the rack; another group, or none, is refused while any
// member holds it; the file goes with the last member.
func TestGroupSharesTheLease(t *testing.T) {
	d := &lease.Dir{Path: t.TempDir()}
	ctx := context.Background()
	in := func(holder, group string) lease.Info {
		i := lease.Self("rack1", holder)
		i.Group = group
		return i
	}
	a, err := d.Acquire(ctx, in("a", "run1"))
	if err != nil || a.Joined {
		t.Fatalf("first member: %v, %+v", err, a)
	}
	b, err := d.Acquire(ctx, in("b", "run1"))
	if err != nil || !b.Joined || b.Holder != "a" {
		t.Fatalf("second member: %v, %+v; want it joined a's lease", err, b)
	}
	for _, g := range []string{"run2", ""} {
		if _, err := d.Acquire(ctx, in("c", g)); !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "held by a (pid ") {
			t.Fatalf("group %q while run1 holds it: %v, want ErrHeld naming a", g, err)
		}
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx, "rack1"); err != nil || !st.Held || st.Stale {
		t.Fatalf("after the first member left: %s, %v; want held by the second", show(st), err)
	}
	if _, err := d.Acquire(ctx, in("c", "run2")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("run2 while a member of run1 is left: %v, want ErrHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx, "rack1"); err != nil || st.Held {
		t.Fatalf("after the last member left: %s, %v; want free", show(st), err)
	}
	if err := b.Release(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
}

// TestWaitHeld: a held rack is retried until it is released (here after
// the second try) within the wait; past the wait the error says how long
// it waited; no wait means one try.
func TestWaitHeld(t *testing.T) {
	d := &lease.Dir{Path: t.TempDir()}
	ctx := context.Background()
	other, err := d.Acquire(ctx, lease.Self("rack1", "other"))
	if err != nil {
		t.Fatal(err)
	}
	tries := 0
	err = lease.WaitHeld(ctx, 0, func() error {
		tries++
		_, err := d.Acquire(ctx, lease.Self("rack1", "me"))
		return err
	})
	if !errors.Is(err, lease.ErrHeld) || tries != 1 || strings.Contains(err.Error(), "waited") {
		t.Fatalf("no wait: %v after %d tries, want ErrHeld after 1", err, tries)
	}
	err = lease.WaitHeld(ctx, 50*time.Millisecond, func() error {
		_, err := d.Acquire(ctx, lease.Self("rack1", "me"))
		return err
	})
	if !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "(waited 50ms)") {
		t.Fatalf("wait past the holder: %v, want ErrHeld saying it waited", err)
	}
	tries = 0
	var mine *lease.Lease
	err = lease.WaitHeld(ctx, time.Minute, func() (err error) {
		tries++
		if tries == 2 {
			if err := other.Release(ctx); err != nil {
				t.Error(err)
			}
		}
		mine, err = d.Acquire(ctx, lease.Self("rack1", "me"))
		return err
	})
	if err != nil || tries != 2 || mine == nil {
		t.Fatalf("wait for a release: %v after %d tries, want the lease on the second", err, tries)
	}
	if err := mine.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
