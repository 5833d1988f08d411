// Package mcapjstest runs the independent MCAP checks of
// recording/mcap/testdata/mcapjs (check.js over @mcap/core and
// Foxglove's ROS 2 decoder, pinned in its package-lock.json and
// installed by .ci/test with npm ci) from any package's tests. Tests
// only.
package mcapjstest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the harness's directory (recording/mcap/testdata/mcapjs), found
// from this file's place in the source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "mcapjs")
}

// Run sends req to check.js as JSON on its stdin and decodes its answer
// into out. It skips t, saying how to install them, when node or the
// modules are missing, and fails t when check.js fails. Blocks until
// node exits.
func Run(t testing.TB, req any, out any) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the @mcap/core checks need Node 20 (.ci/test)")
	}
	dir := Dir()
	for _, m := range []string{"@mcap/core", "@foxglove/wasm-zstd", "@foxglove/wasm-lz4", "lz4js"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err != nil {
			t.Skipf("%s is not installed in %s: run `npm ci --no-audit --no-fund` there (.ci/test does)", m, dir)
		}
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "check.js"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check.js: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node output: %v\n%.2000s", err, b)
	}
}
