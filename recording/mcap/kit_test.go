package mcap_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hilrig/hilrig/recording/mcap"
)

// msg is a message as a test expects it, Data copied.
type msg struct {
	Channel  uint16
	Seq      uint32
	Log, Pub uint64
	Data     string
}

func (m msg) String() string {
	return fmt.Sprintf("ch%d #%d t%d/%d %dB", m.Channel, m.Seq, m.Log, m.Pub, len(m.Data))
}

func sortMsgs(ms []msg) []msg {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b msg) int {
		return cmp.Or(cmp.Compare(a.Log, b.Log), cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Seq, b.Seq))
	})
	return ms
}

// config is one way of writing a file.
type config struct {
	name string
	opts mcap.Options
}

func configs() []config {
	h := mcap.Header{Profile: "x-hilrig-test", Library: "hilrig test"}
	return []config{
		{"unchunked", mcap.Options{Header: h, Unchunked: true}},
		{"chunked-none", mcap.Options{Header: h, ChunkSize: 4 << 10}},
		{"chunked-zstd", mcap.Options{Header: h, Compression: mcap.CompressZstd, ChunkSize: 4 << 10}},
		{"chunked-lz4", mcap.Options{Header: h, Compression: mcap.CompressLZ4, ChunkSize: 4 << 10}},
		{"one-chunk-zstd", mcap.Options{Header: h, Compression: mcap.CompressZstd}},
	}
}

// chunked are the configs that write chunks (none, zstd, lz4) with the
// given chunk size.
func chunked(size int) []config {
	cs := configs()[1:4]
	for i := range cs {
		cs[i].opts.ChunkSize = size
	}
	return cs
}

// writeSample writes n messages on three channels (two schemas, one
// channel without schema) with sizes from 0 to a few kB, log times
// mostly rising with some out of order, and returns the file and the
// messages in write order.
func writeSample(t testing.TB, opts mcap.Options, n int, seed uint64) ([]byte, []msg) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, opts)
	must(err)
	must(w.AddSchema(mcap.Schema{ID: 1, Name: "std_msgs/msg/String", Encoding: "ros2msg", Data: []byte("string data\n")}))
	must(w.AddSchema(mcap.Schema{ID: 2, Name: "Blob", Encoding: "jsonschema", Data: []byte(`{"type":"object"}`)}))
	must(w.AddChannel(mcap.Channel{ID: 1, SchemaID: 1, Topic: "/chatter", MessageEncoding: "cdr", Metadata: map[string]string{"offered_qos_profiles": ""}}))
	must(w.AddChannel(mcap.Channel{ID: 7, SchemaID: 2, Topic: "/blob", MessageEncoding: "json"}))
	must(w.AddChannel(mcap.Channel{ID: 3, Topic: "/raw", MessageEncoding: "x-raw", Metadata: map[string]string{"a": "1", "b": "2"}}))
	must(w.WriteMetadata("run", map[string]string{"case": "imu/udp", "seed": fmt.Sprint(seed)}))
	must(w.WriteAttachment(mcap.Attachment{LogTime: 5, CreateTime: 4, Name: "rack.yaml", MediaType: "application/yaml", Data: []byte("boards: [a, b]\n")}))
	rng := rand.New(rand.NewPCG(seed, 35))
	chans := []uint16{1, 7, 3}
	var want []msg
	var data []byte
	ts := uint64(1_700_000_000_000_000_000)
	for i := range n {
		ts += uint64(rng.IntN(1_000_000))
		lt := ts
		if rng.IntN(10) == 0 {
			lt -= uint64(rng.IntN(3_000_000)) // out of order
		}
		size := rng.IntN(300)
		if rng.IntN(20) == 0 {
			size = rng.IntN(6000)
		}
		data = data[:0]
		for range size {
			data = append(data, byte(rng.IntN(4)+'a')) // compressible
		}
		m := mcap.Message{ChannelID: chans[i%3], Sequence: uint32(i), LogTime: lt, PublishTime: lt - 10, Data: data}
		must(w.WriteMessage(&m))
		want = append(want, msg{m.ChannelID, m.Sequence, m.LogTime, m.PublishTime, string(data)})
	}
	must(w.Close())
	return buf.Bytes(), want
}

// streamAll reads every message with a StreamReader; err is the error
// that ended reading (nil at a clean end).
func streamAll(b []byte, lim mcap.Limits) (*mcap.StreamReader, []msg, error) {
	s, err := mcap.NewStreamReader(bytes.NewReader(b), lim)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	got, err := drainMsgs(s.Next)
	return s, got, err
}

// drainMsgs calls next until io.EOF (a nil error) or another error,
// collecting the messages: the read loop both readers share.
func drainMsgs(next func() (*mcap.Message, error)) ([]msg, error) {
	var got []msg
	for {
		m, err := next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, msg{m.ChannelID, m.Sequence, m.LogTime, m.PublishTime, string(m.Data)})
	}
}

// indexedAll reads every message with an IndexedReader.
func indexedAll(b []byte, lim mcap.Limits) (*mcap.IndexedReader, []msg, error) {
	x, err := mcap.NewIndexedReader(bytes.NewReader(b), int64(len(b)), lim)
	if err != nil {
		return nil, nil, err
	}
	defer x.Close()
	got, err := drainMsgs(x.Next)
	return x, got, err
}

func equalMsgs(t testing.TB, what string, got, want []msg) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: message %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// inLogOrder fails unless ms come in non-decreasing log time.
func inLogOrder(t testing.TB, what string, ms []msg) {
	t.Helper()
	for i := 1; i < len(ms); i++ {
		if ms[i].Log < ms[i-1].Log {
			t.Fatalf("%s: message %d (%v) logged before message %d (%v)", what, i, ms[i], i-1, ms[i-1])
		}
	}
}
