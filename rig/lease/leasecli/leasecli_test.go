package leasecli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"

	"github.com/hilrig/hilrig/rig/lease"
	"github.com/hilrig/hilrig/rig/lease/leasecli"
)

// TestMain runs the lease keeper when `rack lease` starts this binary as
// `rack keep` (it re-executes itself, here the test binary).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "rack" && os.Args[2] == "keep" {
		if err := leasecli.Run(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHolder starts a process to hold leases for (a shell's stand-in),
// killed at cleanup; hp is its pid as the -pid flag takes it.
func startHolder(t *testing.T) (holder *exec.Cmd, hp string) {
	t.Helper()
	holder = exec.Command("sleep", "300")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	return holder, strconv.Itoa(holder.Process.Pid)
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := leasecli.Run(context.Background(), args, &out, &errb)
	return out.String() + errb.String(), err
}

// TestLeaseStatusRelease: a lease held for a process, refused to another,
// stale once the process is killed and then taken over; release.
func TestLeaseStatusRelease(t *testing.T) {
	dir := t.TempDir()
	holder, hp := startHolder(t)
	if out, err := run(t, "lease", "-dir", dir, "-holder", "alice", "-pid", hp, "lab1"); err != nil || !strings.Contains(out, "leased by alice (pid "+hp) {
		t.Fatalf("lease: %q, %v", out, err)
	}
	if out, err := run(t, "status", "-dir", dir, "lab1"); err != nil || !strings.Contains(out, "leased by alice") {
		t.Fatalf("status: %q, %v", out, err)
	}
	if _, err := run(t, "lease", "-dir", dir, "-holder", "bob", "lab1"); !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("bob's lease: %v", err)
	}
	if _, err := run(t, "release", "-dir", dir, "lab1"); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("release by a non-holder: %v", err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	// The keeper that held the lease for the holder exits with it.
	testkit.Until(t, 10*time.Second, func() error {
		if out, err := run(t, "status", "-dir", dir, "lab1"); err != nil || !strings.Contains(out, "stale lease of alice") {
			return fmt.Errorf("status after the holder died: %q, %v", out, err)
		}
		return nil
	})
	out, err := run(t, "lease", "-dir", dir, "-holder", "bob", "lab1")
	if err != nil || !strings.Contains(out, "took over the stale lease of alice") {
		t.Fatalf("takeover: %q, %v", out, err)
	}
	if out, err := run(t, "release", "-dir", dir, "lab1"); err != nil || !strings.Contains(out, "free") {
		t.Fatalf("release: %q, %v", out, err)
	}
	if _, err := run(t, "grab", "-dir", dir, "lab1"); !errors.Is(err, leasecli.ErrUsage) {
		t.Fatalf("unknown sub-command: %v", err)
	}
}

// keepers returns the pids of this process's children running `rack keep`
// that have not exited (zombies excluded).
func keepers(t *testing.T) []int {
	t.Helper()
	return testkit.PIDs(t, func(pid int) bool {
		stat, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmdline, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err1 != nil || err2 != nil {
			return false
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			return false
		}
		return strings.HasSuffix(string(cmdline), "\x00rack\x00keep\x00")
	})
}

// TestKeeperHoldsUntilRelease: `rack lease` returns while its keeper
// holds the lease for the holder process; `release` by that process frees
// the rack at once and the keeper exits.
func TestKeeperHoldsUntilRelease(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	_, hp := startHolder(t)
	// Keepers of earlier tests may still be exiting: count only the ones
	// this lease started, by PID, not a total that theirs can shrink.
	before := keepers(t)
	if out, err := run(t, "lease", "-dir", dir, "-holder", "alice", "-pid", hp, "lab1"); err != nil {
		t.Fatalf("lease: %q, %v", out, err)
	}
	var started []int
	for _, pid := range keepers(t) {
		if !slices.Contains(before, pid) {
			started = append(started, pid)
		}
	}
	if len(started) != 1 {
		t.Fatalf("lease started keepers %v, want exactly one (earlier ones: %v)", started, before)
	}
	if out, err := run(t, "status", "-dir", dir, "lab1"); err != nil || !strings.Contains(out, "leased by alice") {
		t.Fatalf("status with the keeper holding: %q, %v", out, err)
	}
	if out, err := run(t, "release", "-dir", dir, "-pid", hp, "lab1"); err != nil || !strings.Contains(out, "free") {
		t.Fatalf("release by the holder: %q, %v", out, err)
	}
	if out, err := run(t, "status", "-dir", dir, "lab1"); err != nil || !strings.Contains(out, "free") {
		t.Fatalf("status after release: %q, %v", out, err)
	}
	testkit.Eventually(t, 10*time.Second, "the keeper to exit after release", func() bool { return !slices.Contains(keepers(t), started[0]) })
}
