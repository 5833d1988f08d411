package mcap_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/mcapjstest"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
)

// The independent checks (issue 35, 4): Foxglove's TypeScript MCAP
// library (npm @mcap/core 2.2.2 with @foxglove/wasm-zstd, @foxglove/wasm-lz4
// and lz4js, pinned in testdata/mcapjs/package-lock.json, installed by
// .ci/test with npm ci) reads what hilrig writes, and writes what hilrig
// must read. Nobody here wrote it.

// jsMsg is a message as check.js passes it.
type jsMsg struct {
	Channel uint16 `json:"channel"`
	Seq     uint32 `json:"seq"`
	Log     string `json:"log"`
	Pub     string `json:"pub"`
	Data    string `json:"data"`
}

func (m jsMsg) msg(t *testing.T) msg {
	t.Helper()
	lt, err1 := strconv.ParseUint(m.Log, 10, 64)
	pt, err2 := strconv.ParseUint(m.Pub, 10, 64)
	d, err3 := hex.DecodeString(m.Data)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return msg{m.Channel, m.Seq, lt, pt, string(d)}
}

func toJS(m msg) jsMsg {
	return jsMsg{m.Channel, m.Seq, strconv.FormatUint(m.Log, 10), strconv.FormatUint(m.Pub, 10), hex.EncodeToString([]byte(m.Data))}
}

// mcapJS runs check.js with req and decodes its results into out.
func mcapJS(t *testing.T, req any, out any) { t.Helper(); mcapjstest.Run(t, req, out) }

// Files hilrig writes (unchunked; chunks uncompressed, zstd, lz4; one big
// chunk) read through @mcap/core's stream reader (chunk CRCs) and indexed
// reader (summary CRC, chunk CRCs) to the messages written, the
// data-section CRC recomputed over every byte before Data End equal to
// the one written, the statistics, chunk compressions, channels and
// schemas as written.
func TestMcapCoreReadsHilrig(t *testing.T) {
	dir := t.TempDir()
	var files []string
	wants := map[string][]msg{}
	cfgs := map[string]config{}
	for _, c := range configs() {
		b, want := writeSample(t, c.opts, 600, 11)
		f := filepath.Join(dir, c.name+".mcap")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		wants[f], cfgs[f] = want, c
	}
	var res struct {
		Results []struct {
			File        string                            `json:"file"`
			Error       string                            `json:"error"`
			Header      mcap.Header                       `json:"header"`
			Stream      []jsMsg                           `json:"stream"`
			Indexed     []jsMsg                           `json:"indexed"`
			Records     map[string]int                    `json:"records"`
			DataCRC     struct{ Stored, Computed uint32 } `json:"dataCrc"`
			IndexedCRC  uint32                            `json:"indexedDataCrc"`
			Attachments []struct {
				Name      string `json:"name"`
				MediaType string `json:"mediaType"`
				Data      string `json:"data"`
				Log       string `json:"log"`
			} `json:"attachments"`
			Metadata []struct {
				Name     string            `json:"name"`
				Metadata map[string]string `json:"metadata"`
			} `json:"metadata"`
			Chunks     []string `json:"chunkIndexes"`
			Statistics struct {
				MessageCount string `json:"messageCount"`
				ChannelCount int    `json:"channelCount"`
				SchemaCount  int    `json:"schemaCount"`
				ChunkCount   int    `json:"chunkCount"`
			} `json:"statistics"`
			Channels []struct {
				ID       uint16            `json:"id"`
				Topic    string            `json:"topic"`
				SchemaID uint16            `json:"schemaId"`
				Encoding string            `json:"encoding"`
				Metadata map[string]string `json:"metadata"`
			} `json:"channels"`
			Schemas []struct {
				ID       uint16 `json:"id"`
				Name     string `json:"name"`
				Encoding string `json:"encoding"`
			} `json:"schemas"`
		} `json:"results"`
	}
	mcapJS(t, map[string]any{"mode": "read", "files": files}, &res)
	if len(res.Results) != len(files) {
		t.Fatalf("node answered %d files of %d", len(res.Results), len(files))
	}
	for _, r := range res.Results {
		c, want := cfgs[r.File], wants[r.File]
		t.Run(c.name, func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("@mcap/core: %s", r.Error)
			}
			if r.Header != c.opts.Header {
				t.Errorf("header %+v", r.Header)
			}
			var got []msg
			for _, m := range r.Stream {
				got = append(got, m.msg(t))
			}
			equalMsgs(t, "@mcap/core stream reader", got, want)
			if r.DataCRC.Stored == 0 || r.DataCRC.Stored != r.DataCRC.Computed || r.IndexedCRC != r.DataCRC.Stored {
				t.Errorf("data-section CRC: stored %08x, recomputed %08x, indexed reader %08x", r.DataCRC.Stored, r.DataCRC.Computed, r.IndexedCRC)
			}
			if r.Statistics.MessageCount != "600" || r.Statistics.ChannelCount != 3 || r.Statistics.SchemaCount != 2 {
				t.Errorf("statistics %+v", r.Statistics)
			}
			if len(r.Attachments) != 1 || r.Attachments[0].Name != "rack.yaml" || r.Attachments[0].MediaType != "application/yaml" ||
				r.Attachments[0].Data != hex.EncodeToString([]byte("boards: [a, b]\n")) || r.Attachments[0].Log != "5" {
				t.Errorf("attachments %+v", r.Attachments)
			}
			if len(r.Metadata) != 1 || r.Metadata[0].Name != "run" || r.Metadata[0].Metadata["case"] != "imu/udp" {
				t.Errorf("metadata %+v", r.Metadata)
			}
			if len(r.Channels) != 3 || len(r.Schemas) != 2 {
				t.Errorf("summary: %d channels, %d schemas", len(r.Channels), len(r.Schemas))
			}
			for _, ch := range r.Channels {
				if ch.ID == 3 && (ch.Topic != "/raw" || ch.SchemaID != 0 || ch.Encoding != "x-raw" || ch.Metadata["b"] != "2") {
					t.Errorf("channel 3: %+v", ch)
				}
			}
			if c.opts.Unchunked {
				if len(r.Indexed) != 0 || len(r.Chunks) != 0 {
					t.Errorf("unchunked: the indexed reader found %d messages in %d chunks", len(r.Indexed), len(r.Chunks))
				}
				return
			}
			got = got[:0]
			for _, m := range r.Indexed {
				got = append(got, m.msg(t))
			}
			equalMsgs(t, "@mcap/core indexed reader", sortMsgs(got), sortMsgs(want))
			// Both indexed readers give the messages in log-time order.
			b, err := os.ReadFile(r.File)
			if err != nil {
				t.Fatal(err)
			}
			_, ours, err := indexedAll(b, mcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			inLogOrder(t, "@mcap/core indexed reader", got)
			inLogOrder(t, "hilrig indexed reader", ours)
			if len(r.Chunks) != r.Statistics.ChunkCount || r.Records["MessageIndex"] < len(r.Chunks) {
				t.Errorf("%d chunk indexes, statistics %d, %d message indexes", len(r.Chunks), r.Statistics.ChunkCount, r.Records["MessageIndex"])
			}
			for _, comp := range r.Chunks {
				if comp != string(c.opts.Compression) {
					t.Fatalf("chunk compression %q, want %q", comp, c.opts.Compression)
				}
			}
		})
	}
}

// Files @mcap/core writes (chunked uncompressed, zstd, lz4; unchunked;
// without a summary) read through hilrig's stream reader, indexed reader
// (when there is a summary) and Recover to the messages written.
func TestHilrigReadsMcapCore(t *testing.T) {
	_, want := writeSample(t, configs()[0].opts, 400, 12)
	var msgs []jsMsg
	for _, m := range want {
		msgs = append(msgs, toJS(m))
	}
	type jsSchema struct {
		ID       uint16 `json:"id"`
		Name     string `json:"name"`
		Encoding string `json:"encoding"`
		Data     string `json:"data"`
	}
	type jsChannel struct {
		ID       uint16            `json:"id"`
		Topic    string            `json:"topic"`
		SchemaID uint16            `json:"schemaId"`
		Encoding string            `json:"encoding"`
		Metadata map[string]string `json:"metadata"`
	}
	schemas := []jsSchema{{1, "std_msgs/msg/String", "ros2msg", hex.EncodeToString([]byte("string data\n"))}, {2, "Blob", "jsonschema", hex.EncodeToString([]byte(`{"type":"object"}`))}}
	channels := []jsChannel{{1, "/chatter", 1, "cdr", nil}, {7, "/blob", 2, "json", nil}, {3, "/raw", 0, "x-raw", map[string]string{"a": "1"}}}
	type jsHeader struct {
		Profile string `json:"profile"`
		Library string `json:"library"`
	}
	type jsCase struct {
		File        string      `json:"file"`
		Chunked     bool        `json:"chunked"`
		ChunkSize   int         `json:"chunkSize"`
		Compression string      `json:"compression"`
		Summary     bool        `json:"summary"`
		Header      jsHeader    `json:"header"`
		Schemas     []jsSchema  `json:"schemas"`
		Channels    []jsChannel `json:"channels"`
		Messages    []jsMsg     `json:"messages"`
	}
	dir := t.TempDir()
	var cases []jsCase
	for _, c := range []struct {
		name    string
		chunked bool
		comp    string
		summary bool
	}{
		{"chunked-none", true, "", true}, {"chunked-zstd", true, "zstd", true}, {"chunked-lz4", true, "lz4", true},
		{"unchunked", false, "", true}, {"chunked-zstd-nosummary", true, "zstd", false}, {"unchunked-nosummary", false, "", false},
	} {
		cases = append(cases, jsCase{File: filepath.Join(dir, c.name+".mcap"), Chunked: c.chunked, ChunkSize: 4096,
			Compression: c.comp, Summary: c.summary, Header: jsHeader{Profile: "x-test", Library: "mcap-core"},
			Schemas: schemas, Channels: channels, Messages: msgs})
	}
	var res struct {
		Results []struct {
			File       string            `json:"file"`
			Error      string            `json:"error"`
			ChannelIDs map[string]uint16 `json:"channelIds"`
		} `json:"results"`
	}
	mcapJS(t, map[string]any{"mode": "write", "cases": cases}, &res)
	if len(res.Results) != len(cases) {
		t.Fatalf("node answered %d cases of %d", len(res.Results), len(cases))
	}
	for i, r := range res.Results {
		c := cases[i]
		t.Run(filepath.Base(c.File), func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("@mcap/core writer: %s", r.Error)
			}
			// @mcap/core picks its own channel IDs.
			exp := make([]msg, len(want))
			for j, m := range want {
				m.Channel = r.ChannelIDs[fmt.Sprint(m.Channel)]
				exp[j] = m
			}
			b, err := os.ReadFile(c.File)
			if err != nil {
				t.Fatal(err)
			}
			s, got, err := streamAll(b, mcap.Limits{})
			if err != nil {
				t.Fatalf("stream reader: %v", err)
			}
			equalMsgs(t, "stream reader", got, exp)
			if s.Header().Library != "mcap-core" || len(s.Channels()) != 3 || len(s.Schemas()) != 2 {
				t.Errorf("header %+v, %d channels, %d schemas", s.Header(), len(s.Channels()), len(s.Schemas()))
			}
			if n := s.Seen().Chunks[mcap.Compression(c.Compression)].Count; c.Chunked != (n > 1) {
				t.Errorf("%d chunks of %q", n, c.Compression)
			}
			x, igot, err := indexedAll(b, mcap.Limits{})
			switch {
			case !c.Summary:
				if !errors.Is(err, mcap.ErrNoSummary) {
					t.Errorf("indexed reader without a summary: %v", err)
				}
			case !c.Chunked:
				if !errors.Is(err, mcap.ErrNotIndexed) {
					t.Errorf("indexed reader, unchunked: %v", err)
				}
			default:
				if err != nil {
					t.Fatalf("indexed reader: %v", err)
				}
				equalMsgs(t, "indexed reader", sortMsgs(igot), sortMsgs(exp))
				inLogOrder(t, "indexed reader", igot)
				if err := x.VerifyDataCRC(); err != nil {
					t.Error(err)
				}
				if st := x.Statistics(); st == nil || st.MessageCount != uint64(len(exp)) {
					t.Errorf("statistics %+v", st)
				}
			}
			var out bytes.Buffer
			rep, err := mcap.Recover(&out, bytes.NewReader(b), mcap.Limits{})
			if err != nil || rep.Stop != nil {
				t.Fatalf("recover: %v, stop %v", err, rep.Stop)
			}
			_, rgot, err := streamAll(out.Bytes(), mcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			equalMsgs(t, "recovered", rgot, exp)
		})
	}
}

// The sample robot mix (ros2mcap.WriteMix) as Foxglove reads a ROS 2
// recording: @mcap/core's stream reader and @foxglove/rosmsg2-serialization
// decoding each payload with the ros2msg schema text the file carries.
// Every message decodes, per topic counts are those written, and each
// topic's first value equals hilrig's decoding of it.
func TestFoxgloveDecodesMix(t *testing.T) {
	var file bytes.Buffer
	st, err := ros2mcap.WriteMix(&file, ros2mcap.MixOptions{Duration: time.Second, Seed: 3, Compression: mcap.CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mix.mcap")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Results []struct {
			Error string `json:"error"`
			ROS2  map[string]struct {
				Count int            `json:"count"`
				First map[string]any `json:"first"`
			} `json:"ros2"`
		} `json:"results"`
	}
	mcapJS(t, map[string]any{"mode": "read", "files": []string{path}, "ros2": true}, &res)
	if len(res.Results) != 1 || res.Results[0].Error != "" {
		t.Fatalf("@mcap/core: %+v", res.Results)
	}
	fox := res.Results[0].ROS2
	// hilrig's decoding of each topic's first message.
	r, err := mcap.NewStreamReader(bytes.NewReader(file.Bytes()), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := map[string]map[string]any{}
	for len(first) < len(ros2mcap.MixTopics) {
		m, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := r.Channel(m.ChannelID)
		if first[ch.Topic] != nil {
			continue
		}
		s, _ := r.Schema(ch.SchemaID)
		c, err := ros2mcap.Codec(s)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Decode(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		js, err := c.ToJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		var g map[string]any
		if err := json.Unmarshal(js, &g); err != nil {
			t.Fatal(err)
		}
		first[ch.Topic] = byteArraysAsCounts(g).(map[string]any)
	}
	for _, tp := range ros2mcap.MixTopics {
		f := fox[tp.Topic]
		if f.Count != st.Messages[tp.Topic] {
			t.Errorf("%s: Foxglove decoded %d messages, %d written", tp.Topic, f.Count, st.Messages[tp.Topic])
		}
		if !reflect.DeepEqual(f.First, first[tp.Topic]) {
			t.Errorf("%s: first value\nFoxglove %v\nhilrig   %v", tp.Topic, f.First, first[tp.Topic])
		}
	}
}

// byteArraysAsCounts replaces a "data" byte array by {"bytes": n}, as
// check.js reports typed arrays.
func byteArraysAsCounts(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if a, ok := e.([]any); ok && k == "data" {
				x[k] = map[string]any{"bytes": float64(len(a))}
				continue
			}
			x[k] = byteArraysAsCounts(e)
		}
	case []any:
		for i := range x {
			x[i] = byteArraysAsCounts(x[i])
		}
	}
	return v
}
