package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMcapWired: "hilrig mcap …" reaches mcapcli, and a usage mistake
// exits 2.
func TestMcapWired(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"mcap", "help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "hilrig mcap recover IN OUT") {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"mcap", "info"}, &out, &errb); code != 2 {
		t.Errorf("info without a file: exit %d, want 2", code)
	}
}
