package rig

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
)

// TestStopWarnsWhenAgentSaysNoBye: stop kills an agent that sends no bye
// within its ctx and says so in the rig's log, naming the board; an agent
// that said bye is stopped without a word. Before, the kill was silent,
// which hid an iceoryx stop that got every peer agent killed.
func TestStopWarnsWhenAgentSaysNoBye(t *testing.T) {
	for _, saysBye := range []bool{false, true} {
		// "cat >/dev/null": reads the stop message, never answers.
		proc, err := deploy.StartLocal(context.Background(), "sh", "-c", "cat >/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proc.Kill() })
		var log testkit.SyncBuffer
		a := &Agent{Board: &fixtures.Board{Name: "board-q"}, proc: proc, enc: agentproto.NewEncoder(proc.Stdin),
			bye: make(chan struct{}), readEnd: make(chan struct{}), log: slog.New(slog.NewTextHandler(&log, nil))}
		if saysBye {
			close(a.bye)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err = a.stop(ctx)
		cancel()
		if err != nil {
			t.Fatalf("stop (bye %v): %v", saysBye, err)
		}
		select {
		case <-proc.Done():
		default:
			t.Fatalf("stop (bye %v) returned with the agent's process running", saysBye)
		}
		warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "board=board-q")
		if warned == saysBye {
			t.Errorf("bye %v: warned %v; log: %q", saysBye, warned, log.String())
		}
	}
}
