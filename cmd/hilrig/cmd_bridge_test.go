package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBridgeWired: `hilrig bridge …` runs `HILRIG_PEER_BIN bridge …` with
// the arguments as given (here a script standing in for hilrig-peer that
// prints them), and an unknown --dds is a usage mistake (exit 2) before
// anything runs.
func TestBridgeWired(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hilrig-peer")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HILRIG_PEER_BIN", bin)
	var out, errb bytes.Buffer
	if code := run([]string{"bridge", "--config", "b.json", "--dds=fastdds-udp"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "bridge --config b.json --dds=fastdds-udp" {
		t.Errorf("the peer binary got %q", got)
	}
	out.Reset()
	if code := run([]string{"bridge", "--dds", "zenoh"}, &out, &errb); code != 2 || out.Len() != 0 {
		t.Errorf("--dds zenoh: exit %d, output %q; want 2 and nothing run", code, out.String())
	}
}
