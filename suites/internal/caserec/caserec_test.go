package caserec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/recording/mcap/mcapcli"
	"github.com/hilrig/hilrig/recording/mcap/mcapjstest"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/caserec"
	"github.com/hilrig/hilrig/timesync"
)

// windows are n one-second windows of 100 messages each, latencies
// 10..109 µs, three of them with their stamps (one more dropped).
func windows(n int) []agentproto.Window {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).UnixNano()
	ws := make([]agentproto.Window, n)
	for i := range ws {
		h := report.NewHistogram()
		for k := range 100 {
			h.Record(int64(10_000 + 1_000*k))
		}
		// Three messages' stamps per window, the last received 1 ms
		// before the window's end; the monotonic clock reads 1e12 there.
		mono := int64(1e12) + int64(i)*1e9
		ws[i] = agentproto.Window{Endpoint: "sub0", Index: uint64(i), StartNs: t0 + int64(i)*1e9, EndNs: t0 + int64(i+1)*1e9,
			Received: 100, Latency: h, CPUUserNs: 5e7, CPUSysNs: 5e7, RSSBytes: 1 << 20, MonoEndNs: mono,
			Stamps: []agentproto.MessageStamp{{Seq: uint64(3*i + 1), RecvMono: mono - 3e6, LatencyNs: 40_000},
				{Seq: uint64(3*i + 2), RecvMono: mono - 2e6, LatencyNs: 50_000}, {Seq: uint64(3*i + 3), RecvMono: mono - 1e6, LatencyNs: 60_000}},
			StampsDropped: 1}
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
	if dropped, err := r.Messages("sub0", ws); err != nil || dropped != uint64(len(ws)) {
		t.Fatalf("Messages: %d dropped, %v; want %d", dropped, err, len(ws))
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
	if st.Messages != 25 || st.Dropped != 0 || st.Path != path {
		t.Fatalf("stats %+v, want 25 messages, none dropped, at %s", st, path)
	}
	if strings.ContainsAny(filepath.Base(path), " /") {
		t.Fatalf("file name %q has a space or slash", filepath.Base(path))
	}
	again := record(t, path, windows(1), 0)
	if again.Path == path || !strings.HasSuffix(again.Path, "-2.mcap") {
		t.Fatalf("second recording of the case at %s, want a -2 beside %s", again.Path, path)
	}
	counts := map[string]int{}
	var lw caserec.LatencyWindow
	var msg caserec.Message
	for _, m := range mcapjstest.ReadFile(t, path) {
		counts[m.Topic]++
		if m.Topic == caserec.TopicLatency {
			if err := json.Unmarshal(m.Data, &lw); err != nil {
				t.Fatal(err)
			}
			if int64(m.LogTime) != lw.EndNs {
				t.Fatalf("log time %d, want the window's end %d", m.LogTime, lw.EndNs)
			}
		}
		if m.Topic == caserec.TopicMessages {
			if err := json.Unmarshal(m.Data, &msg); err != nil {
				t.Fatal(err)
			}
			if int64(m.LogTime) != msg.RecvNs || int64(m.PublishTime) != msg.SendNs || msg.RecvNs-msg.SendNs != msg.LatencyNs {
				t.Fatalf("message %+v logged %d published %d", msg, m.LogTime, m.PublishTime)
			}
		}
	}
	if counts[caserec.TopicLatency] != 5 || counts[caserec.TopicPTP] != 5 || counts[caserec.TopicMessages] != 15 {
		t.Fatalf("counts %v, want 5 windows and PTP records, 15 messages", counts)
	}
	// The last message: received 1 ms before the last window's end.
	end := time.Date(2026, 12, 7, 12, 0, 5, 0, time.UTC).UnixNano()
	if msg.Seq != 15 || msg.RecvNs != end-1e6 || msg.LatencyNs != 60_000 {
		t.Fatalf("last message %+v, want seq 15 received at %d", msg, end-1e6)
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
	if st.Dropped == 0 || st.Messages == 0 || st.Messages+st.Dropped != 1000 {
		t.Fatalf("stats %+v, want some written, some dropped, 1000 in all", st)
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
// shows its three channels, their schemas and message counts.
func TestMcapInfoShowsRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.mcap")
	record(t, path, windows(7), 0)
	var out bytes.Buffer
	if err := mcapcli.Run(context.Background(), []string{"info", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{`messages:\s+35,`, `/hilrig/latency\s+7\s+json\s+1 hilrig.LatencyWindow`, `/hilrig/ptp\s+7\s+json\s+2 hilrig.PTPWindow`,
		`/hilrig/messages\s+21\s+json\s+3 hilrig.Message`,
		`1\s+hilrig.LatencyWindow\s+jsonschema`, `2\s+hilrig.PTPWindow\s+jsonschema`, `3\s+hilrig.Message\s+jsonschema`} {
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
	if len(o.Stream) != 15 || len(o.Indexed) != 15 || len(o.Channels) != 3 || len(o.Schemas) != 3 {
		t.Fatalf("@mcap/core read %d stream, %d indexed messages, %d channels, %d schemas; want 15, 15, 3, 3", len(o.Stream), len(o.Indexed), len(o.Channels), len(o.Schemas))
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

// TestEdgesRecording: a GPIO recording holds the one /hilrig/gpio channel
// and every edge, logged at its time; its note names that topic.
func TestEdgesRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), caserec.FileName("scope", "shm gpio"))
	r, err := caserec.CreateEdges(path, caserec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := []caserec.Edge{{Channel: 1, Line: 0, Rising: true, TimeNs: 1e18, Seqno: 1, LineSeqno: 1}, {Channel: 2, Line: 3, Rising: true, TimeNs: 1e18 + 5e4, Seqno: 2, LineSeqno: 1}}
	if err := r.Edges(in); err != nil {
		t.Fatal(err)
	}
	st, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := mcapjstest.ReadFile(t, path)
	if len(got) != 2 || got[1].Topic != caserec.TopicGPIO || got[1].LogTime != uint64(in[1].TimeNs) {
		t.Fatalf("read %+v", got)
	}
	var e caserec.Edge
	if err := json.Unmarshal(got[1].Data, &e); err != nil || e != in[1] {
		t.Fatalf("edge %+v (%v), want %+v", e, err, in[1])
	}
	if n := st.Note("x.mcap"); !strings.Contains(n.Notes[0], "2 messages on /hilrig/gpio;") {
		t.Fatalf("note %q", n.Notes[0])
	}
}
