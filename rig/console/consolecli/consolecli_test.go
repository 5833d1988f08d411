package consolecli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig/console/consolecli"
	"github.com/hilrig/hilrig/rig/console/consoletest"
)

func TestConsoleFollowsThePty(t *testing.T) {
	p := consoletest.New(t)
	dir := t.TempDir()
	rack := filepath.Join(dir, "rack.yaml")
	os.WriteFile(rack, []byte(fmt.Sprintf("name: p\nboards:\n  - name: dut\n    reach: local\n    console: {device: %s, baud: 115200}\n  - name: bare\n    reach: local\n", p.Device)), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb testkit.SyncBuffer
	done := make(chan error, 1)
	capture := filepath.Join(dir, "dut.log")
	go func() { done <- consolecli.Run(ctx, []string{"-rack", rack, "-out", capture, "dut"}, &out, &errb) }()
	// Lines written before the follower subscribed are captured, not
	// printed: keep writing until one is printed.
	for !strings.Contains(out.String(), "Kernel panic") {
		select {
		case err := <-done:
			t.Fatalf("console ended: %v (%s)", err, errb.String())
		case <-ctx.Done():
			t.Fatalf("nothing followed: %q", out.String())
		case <-time.After(20 * time.Millisecond):
			p.Write("Kernel panic - not syncing: test")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[panic] Kernel panic") {
		t.Errorf("followed %q: not flagged", out.String())
	}
	if b, _ := os.ReadFile(capture); !strings.Contains(string(b), "Kernel panic") {
		t.Errorf("capture file %q", b)
	}
	if err := consolecli.Run(context.Background(), []string{"-rack", rack, "bare"}, &out, &errb); !errors.Is(err, fixtures.ErrNotFound) {
		t.Errorf("board without console: %v", err)
	}
}
