package caserec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/mcapcli"
	"github.com/hilrig/hilrig/recording/mcap/mcapjstest"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/caserec"
	"github.com/hilrig/hilrig/timesync"
)

// windows are n one-second windows of 100 messages each, latencies
// 10..109 µs.
func windows(n int) []agentproto.Window {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).UnixNano()
	ws := make([]agentproto.Window, n)
	for i := range ws {
		h := report.NewHistogram()
		for k := range 100 {
			h.Record(int64(10_000 + 1_000*k))
		}
		ws[i] = agentproto.Window{Endpoint: "sub0", Index: uint64(i), StartNs: t0 + int64(i)*1e9, EndNs: t0 + int64(i+1)*1e9,
			Received: 100, Latency: h, CPUUserNs: 5e7, CPUSysNs: 5e7, RSSBytes: 1 << 20}
	}
	return ws
}

// record writes a case recording of ws, each window with its PTP status,
// and returns its stats.
func record(t *testing.T, path string, ws []agentproto.Window, maxBytes int64) caserec.Stats {
	t.Helper()
	r, err := caserec.Create(path, caserec.Options{MaxBytes: maxBytes, Case: map[string]string{"suite": "latency", "name": "shm 64B"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Windows("sub0", ws); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		q := timesync.WindowQuality{From: time.Unix(0, w.StartNs), To: time.Unix(0, w.EndNs), Locked: true, Bound: 200 * time.Nanosecond,
			Boards: []timesync.BoardWindow{{Board: "b", Samples: 4, Locked: true, MaxAbsOffset: 80 * time.Nanosecond}}}
		if err := r.PTP(q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRecording: a case's windows and PTP status read back from the
// file by hilrig's indexed reader, one message per window per channel,
// in log-time order, with the window's figures.
func TestRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), caserec.FileName("latency", "shm 64B/1000Hz"))
	st := record(t, path, windows(5), 0)
	if st.Messages != 10 || st.Dropped != 0 || st.Path != path {
		t.Fatalf("stats %+v, want 10 messages, none dropped, at %s", st, path)
	}
	if strings.ContainsAny(filepath.Base(path), " /") {
		t.Fatalf("file name %q has a space or slash", filepath.Base(path))
	}
	again := record(t, path, windows(1), 0)
	if again.Path == path || !strings.HasSuffix(again.Path, "-2.mcap") {
		t.Fatalf("second recording of the case at %s, want a -2 beside %s", again.Path, path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	fi, _ := f.Stat()
	r, err := mcap.NewIndexedReader(f, fi.Size(), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var lw caserec.LatencyWindow
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := r.Channel(m.ChannelID)
		counts[ch.Topic]++
		if ch.Topic == caserec.TopicLatency {
			if err := json.Unmarshal(m.Data, &lw); err != nil {
				t.Fatal(err)
			}
			if int64(m.LogTime) != lw.EndNs {
				t.Fatalf("log time %d, want the window's end %d", m.LogTime, lw.EndNs)
			}
		}
	}
	if counts[caserec.TopicLatency] != 5 || counts[caserec.TopicPTP] != 5 {
		t.Fatalf("counts %v, want 5 per topic", counts)
	}
	if lw.Window != 4 || lw.Samples != 100 || lw.P50Ns < 58_000 || lw.P50Ns > 61_000 || lw.MaxNs < 108_000 || lw.CPUPercent != 10 {
		t.Fatalf("last window %+v", lw)
	}
	if n := st.Note("runs/x/recordings/" + filepath.Base(path)); len(n.Notes) != 1 || !strings.Contains(n.Notes[0], "runs/x/recordings/") {
		t.Fatalf("note %+v", n)
	}
}

// TestRecordingCap: past the cap, messages are counted, not written; the
// file stays whole, carries a hilrig.cut metadata record, and the case's
// note says the recording was cut.
func TestRecordingCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.mcap")
	st := record(t, path, windows(200), 8<<10)
	if st.Dropped == 0 || st.Messages == 0 || st.Messages+st.Dropped != 400 {
		t.Fatalf("stats %+v, want some written, some dropped, 400 in all", st)
	}
	n := st.Note("cut.mcap")
	if len(n.Notes) != 2 || !strings.Contains(n.Notes[1], "CUT") {
		t.Fatalf("note %+v, want the cut said", n)
	}
	var out bytes.Buffer
	if err := mcapcli.Run(context.Background(), []string{"info", "--check", path}, &out, io.Discard); err != nil {
		t.Fatalf("hilrig mcap info --check: %v\n%s", err, out.String())
	}
	fi, _ := os.Stat(path)
	if fi.Size() > 16<<10 {
		t.Fatalf("capped file is %d B", fi.Size())
	}
}

// TestMcapInfoShowsRecording: `hilrig mcap info` on a case recording
// shows its two channels, their schemas and message counts.
func TestMcapInfoShowsRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.mcap")
	record(t, path, windows(7), 0)
	var out bytes.Buffer
	if err := mcapcli.Run(context.Background(), []string{"info", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{`messages:\s+14,`, `/hilrig/latency\s+7\s+json\s+1 hilrig.LatencyWindow`, `/hilrig/ptp\s+7\s+json\s+2 hilrig.PTPWindow`,
		`1\s+hilrig.LatencyWindow\s+jsonschema`, `2\s+hilrig.PTPWindow\s+jsonschema`} {
		if !regexp.MustCompile(want).MatchString(s) {
			t.Errorf("info lacks %q:\n%s", want, s)
		}
	}
}

// TestMcapCoreReadsRecording: @mcap/core (recording/mcap's pinned
// independent reader, testdata/mcapjs) reads a case recording through
// its stream and indexed readers with every CRC checked, the data-section
// CRC recomputed, to the channels, schemas and messages written.
func TestMcapCoreReadsRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.mcap")
	record(t, path, windows(3), 0)
	var out struct{ Results []jsRead }
	mcapJS(t, map[string]any{"mode": "read", "files": []string{path}}, &out)
	if len(out.Results) != 1 || out.Results[0].Error != "" {
		t.Fatalf("@mcap/core: %+v", out)
	}
	o := out.Results[0]
	if len(o.Stream) != 6 || len(o.Indexed) != 6 || len(o.Channels) != 2 || len(o.Schemas) != 2 {
		t.Fatalf("@mcap/core read %d stream, %d indexed messages, %d channels, %d schemas; want 6, 6, 2, 2", len(o.Stream), len(o.Indexed), len(o.Channels), len(o.Schemas))
	}
	if o.DataCrc.Stored != o.DataCrc.Computed || o.DataCrc.Stored == 0 {
		t.Fatalf("data-section CRC stored %08x, computed %08x", o.DataCrc.Stored, o.DataCrc.Computed)
	}
	for _, s := range o.Schemas {
		if s.Encoding != "jsonschema" {
			t.Fatalf("schema %+v", s)
		}
	}
}

// jsRead is check.js's answer for one file read.
type jsRead struct {
	Error    string
	Stream   []struct{ Channel int }
	Indexed  []struct{ Channel int }
	Channels []struct {
		Topic, Encoding string
	}
	Schemas []struct{ Name, Encoding string }
	DataCrc struct{ Stored, Computed uint32 }
}

// mcapJS runs recording/mcap's @mcap/core harness (check.js) on req.
func mcapJS(t *testing.T, req any, out any) { t.Helper(); mcapjstest.Run(t, req, out) }
