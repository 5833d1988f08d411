package ptpcli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptpcli"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

func run(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := ptpcli.Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"status"},
		{"status", "--bogus"},
		{"watch"},
		{"watch", "--uds", "/x", "--period", "0s"},
		{"watch", "--uds", "/x", "--expect-gm", "nope"},
		{"status", "--uds", "/x", "extra"},
	} {
		_, _, err := run(args...)
		if !errors.Is(err, ptpcli.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", args, err)
		}
	}
}

func TestStatusMissingSocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gone.sock")
	out, _, err := run("status", "--uds", p)
	if !errors.Is(err, ptpcli.ErrRead) {
		t.Fatalf("err = %v, want ErrRead", err)
	}
	if !strings.Contains(out, p) || !strings.Contains(out, "ERROR") || !strings.Contains(out, "is ptp4l running with uds_address") {
		t.Errorf("table does not explain the missing socket:\n%s", out)
	}
}

func TestAgainstRealPTP4L(t *testing.T) {
	if err := ptprig.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rig, err := ptprig.Start(ctx, &ptprig.Options{GMFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rig.Close() })
	out, _, err := run("status", "--uds", rig.GMSocket, "--uds", rig.SlaveSocket)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(out, rig.GMSocket) || !strings.Contains(out, rig.SlaveSocket) {
		t.Errorf("want a header and one row per socket:\n%s", out)
	}
	t.Logf("\n%s", out)
	js, _, err := run("status", "--uds", rig.GMSocket, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []ptpcli.Row
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(rows) != 1 || rows[0].Status == nil || rows[0].Status.ClockIdentity != rig.GMIdentity {
		t.Errorf("json rows %+v: want the GM's clock identity %s", rows, rig.GMIdentity)
	}
	var st timesync.PortState
	if err := st.UnmarshalText([]byte(rows[0].Status.PortState.String())); err != nil {
		t.Error(err)
	}
	w, _, err := run("watch", "--uds", rig.SlaveSocket, "--period", "100ms", "--count", "2")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(w, rig.SlaveSocket); n != 2 {
		t.Errorf("watch --count 2 printed %d sample lines:\n%s", n, w)
	}

	// watch marks the lock transitions: LOCKED once the slave locks, LOCK
	// LOST after the GM is killed.
	pr, pw := io.Pipe()
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- ptpcli.Run(wctx, []string{"watch", "--uds", rig.SlaveSocket, "--period", "1.1s", "--bound", "100us",
			"--expect-gm", rig.GMIdentity.String()}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	killed := false
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if strings.Contains(line, "<== LOCKED") && !killed {
			if err := rig.KillDaemon(ctx, ptprig.GM); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
		if strings.Contains(line, "<== LOCK LOST") {
			break
		}
	}
	wcancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := <-done; err != nil {
		t.Errorf("watch: %v", err)
	}
	t.Logf("watch output:\n%s", strings.Join(lines, "\n"))
	if !killed || !strings.Contains(lines[len(lines)-1], "LOCK LOST") || !strings.Contains(lines[len(lines)-1], "ingress") {
		t.Errorf("watch did not mark LOCKED then LOCK LOST (ingress-stale):\n%s", strings.Join(lines, "\n"))
	}
}
