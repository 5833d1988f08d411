package rig

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
)

// syncBuf is a bytes.Buffer safe for the logger and the test at once.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
		var log syncBuf
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
