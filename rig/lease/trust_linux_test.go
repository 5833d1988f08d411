package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig/lease"
)

// nobody is the other user of these tests.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	testkit.NeedRoot(t, "needs root (another user's files, PID namespaces)")
}

// TestHolderInAnotherPIDNamespace (issue 31, finding 4a): a live holder in
// another PID namespace (a container: it is pid 1 there) keeps its lease,
// and a controller in another PID namespace cannot take ours. Before the
// holder's liveness was an OFD lock, the pid and start time recorded in
// the lease were judged in the reader's namespace: pid 1 is the host's
// init there (another start time), so the live lease counted as stale.
func TestHolderInAnotherPIDNamespace(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	d := &lease.Dir{Path: dir}
	ctx := context.Background()

	c := startChildIn(t, dir, true)
	if r := c.Ask(t, "go"); r != "won" {
		t.Fatalf("child in a new PID namespace: %s", r)
	}
	st, err := d.Status(ctx, "rack1")
	if err != nil || !st.Held || st.Stale {
		t.Fatalf("status of the live holder in another PID namespace: %s, %v; want held, not stale", show(st), err)
	}
	if st.PID != 1 {
		t.Fatalf("the child recorded pid %d; want 1 (its own namespace's pid) for this test to mean anything", st.PID)
	}
	if l, err := d.Acquire(ctx, lease.Self("rack1", "me")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire while a live holder in another PID namespace has it: %v (took over %+v), want ErrHeld", err, l)
	}
	if err := c.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	l, err := d.Acquire(ctx, lease.Self("rack1", "me"))
	if err != nil || l.TookOver == nil || l.TookOver.Holder != "child" {
		t.Fatalf("acquire after the holder was killed: %v, %+v; want the child's lease taken over", err, l)
	}

	// The other way round: we hold it, a controller in another PID
	// namespace (which cannot see our pid) must not take it.
	c2 := startChildIn(t, dir, true)
	if r := c2.Ask(t, "go"); !strings.HasPrefix(r, "held:") || !strings.Contains(r, "is held by me (pid ") {
		t.Fatalf("child in a new PID namespace while we hold the lease: %q, want held naming us", r)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestUnsafeDirRefused (finding 4b): the lease directory must be the
// caller's, not writable by group or others, and not a symbolic link; any
// other is refused with an error naming the path and the rule. Before, a
// directory another user made first under /run/lock was used as it was,
// and that user could delete root's live lease.
func TestUnsafeDirRefused(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	foreign := filepath.Join(base, "foreign")
	open := filepath.Join(base, "open")
	link := filepath.Join(base, "link")
	real := filepath.Join(base, "real")
	for _, p := range []string{foreign, open, real} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(foreign, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, rule string }{
		{"owned by another user", foreign, fmt.Sprintf("owned by uid %d", nobody)},
		{"world-writable", open, "writable by group or others"},
		{"symbolic link", link, "a symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &lease.Dir{Path: c.path}
			_, err := d.Acquire(context.Background(), lease.Self("rack1", "me"))
			if !errors.Is(err, lease.ErrUnsafeDir) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("acquire in %s: %v; want ErrUnsafeDir naming the path and %q", c.path, err, c.rule)
			}
			if _, err := d.Status(context.Background(), "rack1"); !errors.Is(err, lease.ErrUnsafeDir) {
				t.Fatalf("status in %s: %v; want ErrUnsafeDir", c.path, err)
			}
			if _, err := os.Stat(filepath.Join(c.path, "rack1.lease")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a lease file was written in the refused directory: %v", err)
			}
		})
	}
}

// TestForeignLeaseOfAnotherHost (finding 4c): a lease file nobody holds
// (no process holds its lock) is stale whatever host and user it names.
// Before, a file another user wrote naming another host blocked root
// until -force, since this host could not judge another host's pid.
func TestForeignLeaseOfAnotherHost(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	b, err := json.Marshal(lease.Info{Rack: "rack1", Holder: "mallory", Host: "elsewhere.example", PID: 4242, Since: time.Now(), Token: "x"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rack1.lease")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	d := &lease.Dir{Path: dir}
	ctx := context.Background()
	if st, err := d.Status(ctx, "rack1"); err != nil || !st.Stale {
		t.Fatalf("status of an unheld lease of another host: %s, %v; want stale", show(st), err)
	}
	l, err := d.Acquire(ctx, lease.Self("rack1", "me"))
	if err != nil || l.TookOver == nil || l.TookOver.Host != "elsewhere.example" {
		t.Fatalf("acquire over an unheld lease of another host: %v, %+v; want it taken over", err, l)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || int(st.Uid) != os.Geteuid() {
		t.Fatalf("lease file after the takeover: uid %d, %v; want ours (%d)", st.Uid, err, os.Geteuid())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
