// Package mcapjstest runs the independent MCAP checks of
// recording/mcap/testdata/mcapjs (check.js over @mcap/core and
// Foxglove's ROS 2 decoder, pinned in its package-lock.json and
// installed by .ci/test with npm ci) from any package's tests, and reads
// a file's messages back for them (ReadFile). Tests only.
package mcapjstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/recording/mcap"
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

// Message is one message of a file read by ReadFile, its data copied.
type Message struct {
	Topic                string
	Sequence             uint32
	LogTime, PublishTime uint64
	Data                 []byte
}

// ReadFile reads every message of the MCAP file at path with
// recording/mcap's indexed reader (log-time order, every CRC checked),
// failing t on any error.
func ReadFile(t testing.TB, path string) []Message {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := mcap.NewIndexedReader(f, fi.Size(), mcap.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	var out []Message
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ch, ok := r.Channel(m.ChannelID)
		if !ok {
			t.Fatalf("%s: message on unknown channel %d", path, m.ChannelID)
		}
		out = append(out, Message{Topic: ch.Topic, Sequence: m.Sequence, LogTime: m.LogTime, PublishTime: m.PublishTime, Data: bytes.Clone(m.Data)})
	}
}
