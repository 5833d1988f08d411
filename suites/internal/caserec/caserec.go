// Package caserec writes a measured case's recording: one MCAP file per
// case, beside the report, with the case's messages (send and receive
// stamps), per-window figures and the PTP status of each window as JSON
// channels, so Foxglove (or `hilrig
// mcap cat`) plots a run's latency against time next to the clocks'
// offset (docs/mcap.md, "Recording a run").
//
// Log times are the windows' ends, Unix ns on the subscriber's
// CLOCK_REALTIME (the controller's on a PTP rack); publish times the
// windows' starts. A Recorder is not safe for concurrent use.
package caserec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/timesync"
)

// Topics of a case recording.
const (
	TopicLatency  = "/hilrig/latency"
	TopicPTP      = "/hilrig/ptp"
	TopicMessages = "/hilrig/messages"
	TopicGPIO     = "/hilrig/gpio"
)

// Schema names (jsonschema).
const (
	SchemaLatency = "hilrig.LatencyWindow"
	SchemaPTP     = "hilrig.PTPWindow"
	SchemaMessage = "hilrig.Message"
	SchemaEdge    = "hilrig.GPIOEdge"
)

// recordOverhead is a Message record's bytes besides its data (opcode,
// length, channel, sequence, two stamps), counted against the cap.
const recordOverhead = 1 + 8 + 2 + 4 + 8 + 8

// ErrRecording wraps every failure to write a recording.
var ErrRecording = errors.New("caserec: recording")

// LatencyWindow is one subscriber window of a case, as recorded on
// TopicLatency. Latencies in ns (one-way, the case's method).
type LatencyWindow struct {
	Subscriber string `json:"subscriber"`
	Window     uint64 `json:"window"`
	StartNs    int64  `json:"start_ns"`
	EndNs      int64  `json:"end_ns"`
	Received   uint64 `json:"received"`
	Lost       uint64 `json:"lost"`
	Samples    int64  `json:"samples"`
	P50Ns      int64  `json:"p50_ns"`
	P99Ns      int64  `json:"p99_ns"`
	MaxNs      int64  `json:"max_ns"`
	// CPUPercent is the subscriber agent's CPU time over the window's
	// length, percent of one core.
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   int64   `json:"rss_bytes"`
}

// Message is one received message, as recorded on TopicMessages: its
// receipt on the subscriber's CLOCK_REALTIME (Unix ns, mapped from its
// CLOCK_MONOTONIC through the window's pair), its send time that minus
// its latency, and the latency (ns, the case's method).
type Message struct {
	Subscriber string `json:"subscriber"`
	Seq        uint64 `json:"seq"`
	SendNs     int64  `json:"send_unix_ns"`
	RecvNs     int64  `json:"recv_unix_ns"`
	LatencyNs  int64  `json:"latency_ns"`
}

// Edge is one GPIO edge, as recorded on TopicGPIO: the capture's channel
// and line, its direction, when (Unix ns: CLOCK_REALTIME, mapped from the
// edge's clock when that was CLOCK_MONOTONIC) and its sequence numbers.
type Edge struct {
	Channel   int    `json:"channel"`
	Line      int    `json:"line"`
	Rising    bool   `json:"rising"`
	TimeNs    int64  `json:"unix_ns"`
	Seqno     uint64 `json:"seqno"`
	LineSeqno uint64 `json:"line_seqno"`
}

// schemas are the JSON schemas of the channels: Foxglove shows the fields.
var schemas = map[string]string{
	SchemaLatency: `{"type":"object","title":"` + SchemaLatency + `","properties":{` +
		`"subscriber":{"type":"string"},"window":{"type":"integer"},"start_ns":{"type":"integer"},"end_ns":{"type":"integer"},` +
		`"received":{"type":"integer"},"lost":{"type":"integer"},"samples":{"type":"integer"},` +
		`"p50_ns":{"type":"integer"},"p99_ns":{"type":"integer"},"max_ns":{"type":"integer"},` +
		`"cpu_percent":{"type":"number"},"rss_bytes":{"type":"integer"}}}`,
	SchemaMessage: `{"type":"object","title":"` + SchemaMessage + `","properties":{` +
		`"subscriber":{"type":"string"},"seq":{"type":"integer"},"send_unix_ns":{"type":"integer"},` +
		`"recv_unix_ns":{"type":"integer"},"latency_ns":{"type":"integer"}}}`,
	SchemaEdge: `{"type":"object","title":"` + SchemaEdge + `","properties":{` +
		`"channel":{"type":"integer"},"line":{"type":"integer"},"rising":{"type":"boolean"},` +
		`"unix_ns":{"type":"integer"},"seqno":{"type":"integer"},"line_seqno":{"type":"integer"}}}`,
	// timesync.WindowQuality's JSON.
	SchemaPTP: `{"type":"object","title":"` + SchemaPTP + `","properties":{` +
		`"from":{"type":"string"},"to":{"type":"string"},"locked":{"type":"boolean"},"bound_ns":{"type":"integer"},` +
		`"boards":{"type":"array","items":{"type":"object","properties":{"board":{"type":"string"},"samples":{"type":"integer"},` +
		`"locked":{"type":"boolean"},"reason":{"type":"string"},"max_abs_offset_ns":{"type":"integer"},"max_path_delay_ns":{"type":"integer"}}}}}}`,
}

// Options configure a Recorder.
type Options struct {
	// MaxBytes caps the messages' records (uncompressed bytes); past it
	// messages are counted, not written. 0: DefaultMaxBytes.
	MaxBytes int64
	// Case names the case in the file's "hilrig.case" metadata.
	Case map[string]string
}

// DefaultMaxBytes is the cap when Options.MaxBytes is 0.
const DefaultMaxBytes = 64 << 20

// Recorder writes one case's recording.
type Recorder struct {
	f        *os.File
	w        *mcap.Writer
	path     string
	max, n   int64
	seq      map[uint16]uint32
	topics   []string
	messages uint64
	dropped  uint64
	buf      []byte
}

// Stats is what a closed Recorder wrote.
type Stats struct {
	// Path is the file written (Create's path, or its "-N" variant).
	Path     string
	Messages uint64
	// Dropped counts the messages the cap kept out (0: not cut).
	Dropped  uint64
	MaxBytes int64
	// Topics are the file's channels.
	Topics []string
}

const (
	chanLatency  uint16 = 1
	chanPTP      uint16 = 2
	chanMessages uint16 = 3
	chanGPIO     uint16 = 4
)

// chanDef is one channel of a recording and its schema (same ID).
type chanDef struct {
	id            uint16
	schema, topic string
}

var (
	caseChannels = []chanDef{{chanLatency, SchemaLatency, TopicLatency}, {chanPTP, SchemaPTP, TopicPTP}, {chanMessages, SchemaMessage, TopicMessages}}
	edgeChannels = []chanDef{{chanGPIO, SchemaEdge, TopicGPIO}}
)

// Create creates the file at path (its directory too; recordings are
// never overwritten: when path exists, "-2", "-3", … is added before
// ".mcap", for a case measured again in the same run) and writes the
// header, the schemas, the channels and the case's metadata. Blocks on
// file I/O.
func Create(path string, opts Options) (*Recorder, error) {
	return create(path, opts, caseChannels)
}

// CreateEdges is Create for a recording of GPIO edges only (TopicGPIO),
// written after the case's own recording (a capture's edges are read
// once the flow has ended).
func CreateEdges(path string, opts Options) (*Recorder, error) {
	return create(path, opts, edgeChannels)
}

func create(path string, opts Options, defs []chanDef) (*Recorder, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecording, err)
	}
	base := strings.TrimSuffix(path, ".mcap")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for i := 2; errors.Is(err, fs.ErrExist) && i < 1000; i++ {
		path = fmt.Sprintf("%s-%d.mcap", base, i)
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecording, err)
	}
	w, err := mcap.NewWriter(f, mcap.Options{Header: mcap.Header{Library: "hilrig caserec"},
		Compression: mcap.CompressZstd, ChunkSize: 256 << 10})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrRecording, path, err)
	}
	r := &Recorder{f: f, w: w, path: path, max: opts.MaxBytes, seq: map[uint16]uint32{}}
	for _, d := range defs {
		r.topics = append(r.topics, d.topic)
	}
	for _, d := range defs {
		if err == nil {
			err = w.AddSchema(mcap.Schema{ID: d.id, Name: d.schema, Encoding: "jsonschema", Data: []byte(schemas[d.schema])})
		}
		if err == nil {
			err = w.AddChannel(mcap.Channel{ID: d.id, SchemaID: d.id, Topic: d.topic, MessageEncoding: "json"})
		}
	}
	if err == nil && len(opts.Case) > 0 {
		err = w.WriteMetadata("hilrig.case", opts.Case)
	}
	if err != nil {
		r.abort()
		return nil, fmt.Errorf("%w: %s: %w", ErrRecording, path, err)
	}
	return r, nil
}

func (r *Recorder) abort() {
	_ = r.w.Close()
	_ = r.f.Close()
}

// write writes v as JSON on channel ch, or counts it when the cap is
// reached.
func (r *Recorder) write(ch uint16, logNs, pubNs int64, v any) error {
	var err error
	r.buf, err = json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRecording, r.path, err)
	}
	if r.dropped > 0 || r.n+int64(len(r.buf))+recordOverhead > r.max {
		r.dropped++
		return nil
	}
	r.n += int64(len(r.buf)) + recordOverhead
	m := mcap.Message{ChannelID: ch, Sequence: r.seq[ch], LogTime: uint64(max(logNs, 0)), PublishTime: uint64(max(pubNs, 0)), Data: r.buf}
	r.seq[ch]++
	if err := r.w.WriteMessage(&m); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRecording, r.path, err)
	}
	r.messages++
	return nil
}

// Windows records a subscriber's windows on TopicLatency.
func (r *Recorder) Windows(subscriber string, ws []agentproto.Window) error {
	for i := range ws {
		w := &ws[i]
		lw := LatencyWindow{Subscriber: subscriber, Window: w.Index, StartNs: w.StartNs, EndNs: w.EndNs,
			Received: w.Received, Lost: w.Lost, RSSBytes: w.RSSBytes}
		if h := w.Latency; h != nil && h.Count() > 0 {
			lw.Samples, lw.P50Ns, lw.P99Ns, lw.MaxNs = h.Count(), h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(100)
		}
		if d := w.EndNs - w.StartNs; d > 0 {
			lw.CPUPercent = 100 * float64(w.CPUUserNs+w.CPUSysNs) / float64(d)
		}
		if err := r.write(chanLatency, w.EndNs, w.StartNs, lw); err != nil {
			return err
		}
	}
	return nil
}

// Messages records the per-message stamps of a subscriber's windows
// (agentproto.Window.Stamps) on TopicMessages, logged at their receipt,
// published at their send, and returns how many stamps the agent dropped
// past its per-window cap.
func (r *Recorder) Messages(subscriber string, ws []agentproto.Window) (uint64, error) {
	var dropped uint64
	for i := range ws {
		w := &ws[i]
		dropped += w.StampsDropped
		for _, st := range w.Stamps {
			recv := w.EndNs - (w.MonoEndNs - st.RecvMono)
			m := Message{Subscriber: subscriber, Seq: st.Seq, SendNs: recv - st.LatencyNs, RecvNs: recv, LatencyNs: st.LatencyNs}
			if err := r.write(chanMessages, m.RecvNs, m.SendNs, m); err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}

// Edges records GPIO edges on TopicGPIO (a recorder from CreateEdges),
// each logged and published at its time.
func (r *Recorder) Edges(edges []Edge) error {
	for _, e := range edges {
		if err := r.write(chanGPIO, e.TimeNs, e.TimeNs, e); err != nil {
			return err
		}
	}
	return nil
}

// PTP records the clocks' quality over one window on TopicPTP (logged at
// the window's end).
func (r *Recorder) PTP(q timesync.WindowQuality) error {
	return r.write(chanPTP, q.To.UnixNano(), q.From.UnixNano(), q)
}

// Close writes the summary (and, when the cap cut the recording, a
// "hilrig.cut" metadata record saying how much) and closes the file.
func (r *Recorder) Close() (Stats, error) {
	st := Stats{Path: r.path, Messages: r.messages, Dropped: r.dropped, MaxBytes: r.max, Topics: r.topics}
	var err error
	if r.dropped > 0 {
		err = r.w.WriteMetadata("hilrig.cut", map[string]string{
			"max_bytes": fmt.Sprint(r.max), "messages_not_recorded": fmt.Sprint(r.dropped)})
	}
	err = errors.Join(err, r.w.Close(), r.f.Close())
	if err != nil {
		return st, fmt.Errorf("%w: %s: %w", ErrRecording, r.path, err)
	}
	return st, nil
}

// Note is the case's reference to its recording: rel is the file's path
// relative to the report directory.
func (st Stats) Note(rel string) report.Addition {
	a := report.Noted("caserec", fmt.Sprintf("recording: %s (MCAP, %d messages on %s; `hilrig mcap info`, or open in Foxglove)",
		filepath.ToSlash(rel), st.Messages, strings.Join(st.Topics, ", ")))
	if st.Dropped > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("recording CUT by its cap (record_max_bytes %d B): %d later messages not recorded", st.MaxBytes, st.Dropped))
	}
	return a
}

// FileName is a case's recording file name: its suite and name, every
// byte that is not a letter, digit, '-' or '.' replaced by '_'.
func FileName(suite, name string) string {
	b := []byte(suite + "_" + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b) + ".mcap"
}
