package netns

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/procstat"
)

// TestReapStaleDeletesNamespacesOfGoneOwners: a namespace whose recorded
// owner is gone (pid free, or reused by a process started at another
// time) is deleted with its record; one whose owner runs, or with no
// record, is kept; a record whose namespace and owner are both gone is
// removed. Real namespaces through ip(8).
func TestReapStaleDeletesNamespacesOfGoneOwners(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	me := os.Getpid()
	start, err := procstat.StartTicks(me)
	if err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	reused := addRecorded(t, strconv.Itoa(me)+" "+strconv.FormatInt(start+1, 10)+"\n")
	gone := addRecorded(t, strconv.Itoa(dead)+" 1\n")
	live := addRecorded(t, strconv.Itoa(me)+" "+strconv.FormatInt(start, 10)+"\n")
	unowned := addRecorded(t, "")
	orphanRec := uniqueName("t")
	writeRecord(t, orphanRec, strconv.Itoa(dead)+" 1\n")
	t.Cleanup(func() { _ = removeOwner(orphanRec) })

	reaped, err := reapStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names, err := List()
	if err != nil {
		t.Fatal(err)
	}
	// Another test binary's first New may reap them first: what counts is
	// that they are gone.
	for _, n := range []string{reused, gone} {
		if slices.Contains(names, n) {
			t.Errorf("namespace %s of a gone owner still there (reaped %v)", n, reaped)
		}
		if _, err := os.Stat(filepath.Join(ownerDir, n)); !os.IsNotExist(err) {
			t.Errorf("record of reaped %s: stat %v", n, err)
		}
	}
	for _, n := range []string{live, unowned} {
		if slices.Contains(reaped, n) || !slices.Contains(names, n) {
			t.Errorf("namespace %s must stay: reaped %v, listed %v", n, slices.Contains(reaped, n), slices.Contains(names, n))
		}
	}
	if _, err := os.Stat(filepath.Join(ownerDir, live)); err != nil {
		t.Errorf("record of the live owner's %s: %v", live, err)
	}
	if _, err := os.Stat(filepath.Join(ownerDir, orphanRec)); !os.IsNotExist(err) {
		t.Errorf("record %s without namespace or owner: stat %v", orphanRec, err)
	}
}

// TestNewRecordsOwner: New records this process as the owner, Close
// removes the record with the namespace.
func TestNewRecordsOwner(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	ns, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(ownerDir, ns.Name)
	b, err := os.ReadFile(rec)
	if err != nil {
		_ = ns.Close()
		t.Fatal(err)
	}
	start, _ := procstat.StartTicks(os.Getpid())
	if want := strconv.Itoa(os.Getpid()) + " " + strconv.FormatInt(start, 10) + "\n"; string(b) != want {
		t.Errorf("owner record %q, want %q", b, want)
	}
	if ownerGone(ns.Name) {
		t.Error("ownerGone for this live process's namespace")
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Errorf("owner record after Close: stat %v", err)
	}
}

// TestReapStaleKillsProcessesInside: the processes a gone owner left in
// its namespace (a killed run's daemons) are killed with it, and a process
// outside it is not. Real namespace, real processes.
func TestReapStaleKillsProcessesInside(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	name := addRecorded(t, strconv.Itoa(deadPID(t))+" 1\n")
	start := func(args ...string) (*exec.Cmd, <-chan error) {
		t.Helper()
		// "ready" is printed once the shell runs (inside the namespace
		// when started through ip netns exec); sleep then replaces it.
		cmd := exec.Command(args[0], append(args[1:], "sh", "-c", "echo ready; exec sleep 600")...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	_, insideDone := start("ip", "netns", "exec", name)
	_, outsideDone := start("env")

	if _, err := reapStale(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-insideDone:
		if !strings.Contains(fmt.Sprint(err), "killed") {
			t.Fatalf("the process inside the reaped namespace ended with %v, want killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the process inside the reaped namespace still runs 5 s after reapStale")
	}
	select {
	case err := <-outsideDone:
		t.Fatalf("a process outside the namespace ended (%v)", err)
	default:
	}
	if names, _ := List(); slices.Contains(names, name) {
		t.Fatalf("namespace %s of a gone owner still there", name)
	}
}

// deadPID is the pid of a child that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	return child.Process.Pid
}

// writeRecord writes rec as the owner record of namespace name.
func writeRecord(t *testing.T, name, rec string) {
	t.Helper()
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ownerDir, name), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
}

// addRecorded makes a namespace with owner record rec (none when empty),
// deleted with its record when the test ends.
func addRecorded(t *testing.T, rec string) string {
	t.Helper()
	ctx := context.Background()
	name := uniqueName("t")
	if rec != "" {
		writeRecord(t, name, rec)
	}
	if err := ip(ctx, "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if names, _ := List(); slices.Contains(names, name) {
			_ = ip(ctx, "netns", "delete", name)
		}
		_ = removeOwner(name)
	})
	return name
}
