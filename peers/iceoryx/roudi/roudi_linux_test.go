package roudi

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
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
