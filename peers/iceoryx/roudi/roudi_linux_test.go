package roudi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func skipIfRouDi(t *testing.T) {
	t.Helper()
	up, err := Running()
	if err != nil {
		t.Fatal(err)
	}
	if up {
		t.Skip("a RouDi already runs on this host")
	}
}

// TestRouDiMissing: without iox-roudi, starting one fails at once with
// ErrNoRouDi naming the binary and its package.
func TestRouDiMissing(t *testing.T) {
	skipIfRouDi(t)
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), 1<<20)
	if !errors.Is(err, ErrNoRouDi) || !strings.Contains(err.Error(), "iox-roudi") || !strings.Contains(err.Error(), "Debian package iceoryx") {
		t.Fatalf("StartRouDi without iox-roudi: %v, want ErrNoRouDi naming iox-roudi and its package", err)
	}
}

// TestRouDiStartStopLeavesNothing: a started RouDi holds its lock, and
// Stop leaves no socket, lock, segment or config behind.
func TestRouDiStartStopLeavesNothing(t *testing.T) {
	skipIfRouDi(t)
	r, err := Start(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if up, _ := Running(); !up {
		r.Stop()
		t.Fatal("RouDi started but its lock is not held")
	}
	if cfg := mempools(4096); !strings.Contains(cfg, "size = 16384") || strings.Contains(cfg, "size = 131072") {
		t.Errorf("config for 4 KiB payloads:\n%s, want pools up to 16 KiB only", cfg)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{socketFile, socketFile + ".lock", lockFile, mgmtShm, r.dir} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}

// TestConcurrentStartsTakeTurns: two starters at once (two test binaries,
// two agents) used to both see "none runs"; the loser's daemon aborted and
// its clean-up removed the winner's socket, so the winner never became
// ready (CI: "not ready within 10s" beside "exited while starting (signal:
// aborted)"). Now the second waits for the first to stop, and a starter
// that gives up meanwhile names the holder and removes nothing.
func TestConcurrentStartsTakeTurns(t *testing.T) {
	skipIfRouDi(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type res struct {
		r   *RouDi
		err error
	}
	got := make(chan res, 2)
	for range 2 {
		go func() { r, err := Start(ctx, 4096); got <- res{r, err} }()
	}
	first := <-got
	if first.err != nil {
		t.Fatal(first.err)
	}
	// While the first runs, a starter with a short deadline gives up,
	// naming the lock's holder, and leaves the running daemon's files.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := Start(short, 4096)
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("Start while another starter holds the lock: %v, want a wait that ends naming pid %d", err, os.Getpid())
	}
	for _, p := range []string{socketFile, lockFile, mgmtShm} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the running RouDi's %s is gone after another Start gave up: %v", p, err)
		}
	}
	if err := first.r.Stop(); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second.err != nil {
		t.Fatalf("second Start after the first stopped: %v", second.err)
	}
	if err := second.r.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestAbortedStartLeavesOthersFiles: clean-up after a daemon that never
// held RouDi's lock removes its own config only.
func TestAbortedStartLeavesOthersFiles(t *testing.T) {
	skipIfRouDi(t)
	r, err := Start(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	loser := &RouDi{dir: t.TempDir(), release: func() {}}
	if err := loser.cleanup(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{socketFile, lockFile, mgmtShm} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("clean-up of a daemon that never ran removed the running RouDi's %s", p)
		}
	}
	if up, _ := Running(); !up {
		t.Error("RouDi not running after another's clean-up")
	}
}
