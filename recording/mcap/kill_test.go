package mcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/recording/mcap"
)

const killChildEnv = "HILRIG_MCAP_KILL_CHILD"

// killPayload is message i's data: its index, then a byte pattern, so a
// message read back is checked whole.
func killPayload(b []byte, i uint32) []byte {
	b = binary.LittleEndian.AppendUint32(b[:0], i)
	for k := range 60 + i%200 {
		b = append(b, byte(i+k))
	}
	return b
}

// TestKilledWriterHelper is the child of TestKilledWriterRecovered: it
// records to the file named in its environment until killed, flushing
// every 100 messages and then printing how many messages are flushed.
func TestKilledWriterHelper(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("the child of TestKilledWriterRecovered")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := mcap.NewWriter(f, mcap.Options{Compression: mcap.CompressZstd, ChunkSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddChannel(mcap.Channel{ID: 1, Topic: "/rec", MessageEncoding: "x-test"}); err != nil {
		t.Fatal(err)
	}
	m := mcap.Message{ChannelID: 1}
	for i := range uint32(5_000_000) { // bounded: ~1 GB if never killed
		m.Sequence, m.LogTime, m.PublishTime = i, uint64(i)*1000, uint64(i)*1000
		m.Data = killPayload(m.Data, i)
		if err := w.WriteMessage(&m); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			fmt.Println(i + 1)
		}
	}
}

// A recording whose writer is SIGKILLed mid-run (at whatever point the
// kernel stops it): every message flushed before the kill is read back
// from the cut file and from its recovery, byte for byte, and the
// recovered file is whole for both readers.
func TestKilledWriterRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "killed.mcap")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterHelper$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	child := testkit.StartChild(t, cmd)
	flushed := 0
	for flushed < 3000 {
		line := child.Line(t)
		n, err := strconv.Atoi(line)
		if err != nil {
			if strings.HasPrefix(line, "PASS") || strings.HasPrefix(line, "---") {
				t.Fatalf("child: %s", line)
			}
			continue
		}
		flushed = n
	}
	if err := child.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Cmd.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got []msg) {
		t.Helper()
		if len(got) < flushed {
			t.Fatalf("%s: %d messages, but %d were flushed before the kill", what, len(got), flushed)
		}
		var want []byte
		for i, m := range got {
			want = killPayload(want, uint32(i))
			if m.Seq != uint32(i) || m.Data != string(want) {
				t.Fatalf("%s: message %d is %v", what, i, m)
			}
		}
	}
	_, got, err := streamAll(b, mcap.Limits{})
	if !errors.Is(err, mcap.ErrTruncated) {
		t.Fatalf("the killed file: %v, want ErrTruncated", err)
	}
	check("the killed file", got)
	var out bytes.Buffer
	rep, err := mcap.Recover(&out, bytes.NewReader(b), mcap.Limits{})
	if err != nil || !errors.Is(rep.Stop, mcap.ErrTruncated) {
		t.Fatalf("recover: %v, stop %v", err, rep.Stop)
	}
	_, rgot, err := streamAll(out.Bytes(), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	check("recovered", rgot)
	_, igot, err := indexedAll(out.Bytes(), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	check("recovered, indexed", igot)
	t.Logf("killed after %d flushed messages at %d bytes; recovered %d messages in %d chunks (%d bytes kept)", flushed, len(b), rep.Messages, rep.Chunks, rep.Kept)
}
