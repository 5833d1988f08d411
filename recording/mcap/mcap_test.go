package mcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/recording/mcap"
)

// Every way of writing reads back the same messages through both readers:
// the stream reader in write order, the indexed reader in log-time order
// per chunk (compared sorted), with the statistics, chunk compression and
// the data-section CRC as written.
func TestRoundTrip(t *testing.T) {
	for _, c := range configs() {
		t.Run(c.name, func(t *testing.T) {
			b, want := writeSample(t, c.opts, 600, 1)
			s, got, err := streamAll(b, mcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			equalMsgs(t, "stream", got, want)
			seen := s.Seen()
			if seen.Footer == nil || !seen.DataEnd || seen.Statistics == nil || seen.Statistics.MessageCount != 600 {
				t.Fatalf("stream: footer %v, data end %v, statistics %+v", seen.Footer, seen.DataEnd, seen.Statistics)
			}
			if h := s.Header(); h != c.opts.Header {
				t.Errorf("header %+v, want %+v", h, c.opts.Header)
			}
			if seen.Attachments != 1 || seen.Metadata != 1 || seen.Statistics.AttachmentCount != 1 || seen.Statistics.MetadataCount != 1 {
				t.Errorf("attachments %d, metadata %d, statistics %+v", seen.Attachments, seen.Metadata, seen.Statistics)
			}
			if len(s.Channels()) != 3 || len(s.Schemas()) != 2 {
				t.Errorf("%d channels, %d schemas; want 3, 2", len(s.Channels()), len(s.Schemas()))
			}
			x, xgot, err := indexedAll(b, mcap.Limits{})
			if c.opts.Unchunked {
				if !errors.Is(err, mcap.ErrNotIndexed) {
					t.Fatalf("unchunked file through the index: %v, want ErrNotIndexed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			equalMsgs(t, "indexed", sortMsgs(xgot), sortMsgs(want))
			inLogOrder(t, "indexed", xgot)
			if err := x.VerifyDataCRC(); err != nil {
				t.Fatal(err)
			}
			st := x.Statistics()
			if st == nil || st.MessageCount != 600 || st.ChannelCount != 3 || st.SchemaCount != 2 || int(st.ChunkCount) != len(x.ChunkIndexes()) {
				t.Fatalf("statistics %+v with %d chunk indexes", st, len(x.ChunkIndexes()))
			}
			if st.ChannelMessageCounts[1] != 200 || st.ChannelMessageCounts[7] != 200 || st.ChannelMessageCounts[3] != 200 {
				t.Errorf("channel counts %v, want 200 each", st.ChannelMessageCounts)
			}
			sorted := sortMsgs(want)
			if st.MessageStartTime != sorted[0].Log || st.MessageEndTime != sorted[len(sorted)-1].Log {
				t.Errorf("time range %d..%d, want %d..%d", st.MessageStartTime, st.MessageEndTime, sorted[0].Log, sorted[len(sorted)-1].Log)
			}
			for _, ci := range x.ChunkIndexes() {
				if ci.Compression != c.opts.Compression || len(ci.MessageIndexOffsets) == 0 {
					t.Fatalf("chunk index %+v: want compression %q and message indexes", ci, c.opts.Compression)
				}
			}
			if c.opts.ChunkSize != 0 && len(x.ChunkIndexes()) < 10 {
				t.Errorf("%d chunks for ~100 kB at a 4 kB chunk size", len(x.ChunkIndexes()))
			}
		})
	}
}

// A file cut at any byte: the stream reader returns a prefix of the
// messages, at least every message of the chunks complete before the cut,
// then ErrTruncated; Recover makes it a whole file holding exactly the
// messages of those chunks, which both readers read.
func TestCutShortAnywhere(t *testing.T) {
	for _, c := range chunked(1 << 10) {
		t.Run(c.name, func(t *testing.T) {
			b, want := writeSample(t, c.opts, 60, 2)
			x, _, err := indexedAll(b, mcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			chunks := x.ChunkIndexes()
			dataEnd := chunks[len(chunks)-1].ChunkStartOffset + chunks[len(chunks)-1].ChunkLength
			headerEnd := 8 + 9 + int(binary.LittleEndian.Uint64(b[9:]))
			step := 1
			if testing.Short() {
				step = 7
			}
			for cut := 0; cut < len(b); cut += step {
				// Messages in chunks whose record ends by the cut.
				complete := 0
				for _, ci := range chunks {
					if ci.ChunkStartOffset+ci.ChunkLength <= uint64(cut) {
						complete += int(countIn(t, b, ci))
					}
				}
				_, got, err := streamAll(b[:cut], mcap.Limits{})
				if !errors.Is(err, mcap.ErrTruncated) {
					t.Fatalf("cut at %d: %v, want ErrTruncated", cut, err)
				}
				if len(got) < complete || len(got) > len(want) {
					t.Fatalf("cut at %d: %d messages, want at least %d", cut, len(got), complete)
				}
				equalMsgs(t, "prefix", got, want[:len(got)])
				var out bytes.Buffer
				rep, err := mcap.Recover(&out, bytes.NewReader(b[:cut]), mcap.Limits{})
				if cut < headerEnd {
					if err == nil {
						t.Fatalf("cut at %d: recovered a file without a header", cut)
					}
					continue
				}
				if err != nil {
					t.Fatalf("cut at %d: recover: %v", cut, err)
				}
				if uint64(cut) <= dataEnd && !errors.Is(rep.Stop, mcap.ErrTruncated) {
					t.Fatalf("cut at %d (data ends at %d): recovery stopped on %v, want ErrTruncated", cut, dataEnd, rep.Stop)
				}
				_, rgot, err := streamAll(out.Bytes(), mcap.Limits{})
				if err != nil {
					t.Fatalf("cut at %d: the recovered file: %v", cut, err)
				}
				if len(rgot) < complete || uint64(len(rgot)) != rep.Messages {
					t.Fatalf("cut at %d: recovered %d messages (report %d), want at least %d", cut, len(rgot), rep.Messages, complete)
				}
				equalMsgs(t, "recovered", rgot, want[:len(rgot)])
				_, igot, err := indexedAll(out.Bytes(), mcap.Limits{})
				if err != nil {
					t.Fatalf("cut at %d: the recovered file, indexed: %v", cut, err)
				}
				equalMsgs(t, "recovered, indexed", sortMsgs(igot), sortMsgs(rgot))
			}
		})
	}
}

// countIn counts the messages of one chunk through its message indexes'
// length (16 bytes an entry, 15 of record header and channel each).
func countIn(t *testing.T, b []byte, ci mcap.ChunkIndex) uint64 {
	t.Helper()
	n := ci.MessageIndexLength - uint64(len(ci.MessageIndexOffsets))*(9+2+4)
	return n / 16
}

// A whole file goes through Recover unchanged in content: same messages,
// a data section copied byte for byte.
func TestRecoverWholeFile(t *testing.T) {
	b, want := writeSample(t, configs()[2].opts, 300, 3)
	var out bytes.Buffer
	rep, err := mcap.Recover(&out, bytes.NewReader(b), mcap.Limits{})
	if err != nil || rep.Stop != nil {
		t.Fatalf("recover: %v, stop %v", err, rep.Stop)
	}
	if !bytes.Equal(out.Bytes()[:rep.Kept], b[:rep.Kept]) {
		t.Fatal("data section not copied byte for byte")
	}
	if !bytes.Equal(out.Bytes(), b) {
		t.Error("a whole file's recovery differs from the file (the Writer and Recover write the same summary)")
	}
	_, got, err := streamAll(out.Bytes(), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	equalMsgs(t, "recovered", got, want)
}

// Corruption anywhere a CRC covers is refused with ErrFormat naming the
// record: a chunk's bytes, the data section, the summary.
func TestCorruptionDetected(t *testing.T) {
	b, _ := writeSample(t, configs()[1].opts, 200, 4)
	x, _, err := indexedAll(b, mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ci := x.ChunkIndexes()[1]
	flip := func(at uint64) []byte {
		c := bytes.Clone(b)
		c[at] ^= 0x20
		return c
	}
	// Last byte of the second chunk's records (uncompressed: a message's data).
	bad := flip(ci.ChunkStartOffset + ci.ChunkLength - 1)
	if _, _, err := streamAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("stream over a corrupt chunk: %v", err)
	}
	if _, _, err := indexedAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("indexed over a corrupt chunk: %v", err)
	}
	// A byte of the first schema's name (data section, no chunk CRC).
	bad = flip(uint64(bytes.Index(b, []byte("std_msgs"))))
	if _, _, err := streamAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("stream over a corrupt data section: %v", err)
	}
	xb, err := mcap.NewIndexedReader(bytes.NewReader(bad), int64(len(bad)), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := xb.VerifyDataCRC(); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("data CRC over a corrupt data section: %v", err)
	}
	// A byte of the attachment's data (its own CRC).
	bad = flip(uint64(bytes.Index(b, []byte("boards:"))))
	if _, _, err := streamAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) || !strings.Contains(err.Error(), "rack.yaml") {
		t.Errorf("stream over a corrupt attachment: %v", err)
	}
	// A byte of the summary (the last schema copy's name).
	bad = flip(uint64(bytes.LastIndex(b, []byte("std_msgs"))))
	if _, _, err := indexedAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("indexed over a corrupt summary: %v", err)
	}
	if _, _, err := streamAll(bad, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("stream over a corrupt summary: %v", err)
	}
}

// A record longer than the caps is refused before its bytes are read.
func TestLimits(t *testing.T) {
	b, _ := writeSample(t, configs()[3].opts, 50, 5)
	if _, _, err := streamAll(b, mcap.Limits{MaxChunk: 1024}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("chunk over MaxChunk: %v", err)
	}
	if _, _, err := streamAll(b, mcap.Limits{MaxRecord: 100}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("record over MaxRecord: %v", err)
	}
	if _, err := mcap.NewIndexedReader(bytes.NewReader(b), int64(len(b)), mcap.Limits{MaxSummary: 64}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("summary over MaxSummary: %v", err)
	}
	// A header claiming 2^60 bytes in a file of a few: refused, not allocated.
	huge := append(mcap.Magic[:], 0x01, 0, 0, 0, 0, 0, 0, 0, 0x10)
	if _, err := mcap.NewStreamReader(bytes.NewReader(huge), mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Errorf("huge header: %v", err)
	}
}

// The writer's own errors: unknown channel, schema 0, conflicting IDs,
// use after Close.
func TestWriterRefuses(t *testing.T) {
	w, err := mcap.NewWriter(io.Discard, mcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMessage(&mcap.Message{ChannelID: 4}); err == nil {
		t.Error("message on an unknown channel accepted")
	}
	if err := w.AddSchema(mcap.Schema{ID: 0, Name: "x"}); err == nil {
		t.Error("schema 0 accepted")
	}
	if err := w.AddChannel(mcap.Channel{ID: 1, SchemaID: 9, Topic: "/a"}); err == nil {
		t.Error("channel with an unknown schema accepted")
	}
	if err := w.AddChannel(mcap.Channel{ID: 1, Topic: "/a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddChannel(mcap.Channel{ID: 1, Topic: "/a"}); err != nil {
		t.Errorf("the same channel again: %v", err)
	}
	if err := w.AddChannel(mcap.Channel{ID: 1, Topic: "/b"}); err == nil {
		t.Error("another channel with the same ID accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMessage(&mcap.Message{ChannelID: 1}); !errors.Is(err, mcap.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	var c mcap.Compression
	if err := c.UnmarshalText([]byte("brotli")); err == nil {
		t.Error("unknown compression accepted")
	}
}

// WriteMessage into the open chunk allocates nothing (each compression);
// nor does writing unchunked.
func TestWriteMessageAllocs(t *testing.T) {
	for _, c := range configs() {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			if !opts.Unchunked {
				opts.ChunkSize = 64 << 20 // no chunk is written during the runs
			}
			w, err := mcap.NewWriter(io.Discard, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddChannel(mcap.Channel{ID: 1, Topic: "/imu", MessageEncoding: "cdr"}); err != nil {
				t.Fatal(err)
			}
			m := mcap.Message{ChannelID: 1, Data: make([]byte, 300)}
			for range 5000 { // grow the chunk's index once
				m.LogTime++
				_ = w.WriteMessage(&m)
			}
			allocs := testing.AllocsPerRun(2000, func() {
				m.LogTime++
				if err := w.WriteMessage(&m); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("WriteMessage: %v allocs/op, want 0", allocs)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func BenchmarkWriteMessage(b *testing.B) {
	for _, c := range configs()[:4] {
		b.Run(c.name, func(b *testing.B) {
			w, err := mcap.NewWriter(io.Discard, c.opts)
			if err != nil {
				b.Fatal(err)
			}
			_ = w.AddChannel(mcap.Channel{ID: 1, Topic: "/imu", MessageEncoding: "cdr"})
			m := mcap.Message{ChannelID: 1, Data: bytes.Repeat([]byte("imu-sample "), 30)}
			b.SetBytes(int64(len(m.Data)))
			b.ReportAllocs()
			for b.Loop() {
				m.LogTime++
				if err := w.WriteMessage(&m); err != nil {
					b.Fatal(err)
				}
			}
			_ = w.Close()
		})
	}
}

// StreamReader.Next allocates nothing per message once its buffers have
// grown (the message aliases the chunk; counters are updated in place).
func TestStreamNextAllocs(t *testing.T) {
	for _, c := range chunked(64 << 10) {
		t.Run(c.name, func(t *testing.T) {
			b, _ := writeSample(t, c.opts, 3000, 6)
			r, err := mcap.NewStreamReader(bytes.NewReader(b), mcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for range 1000 { // the first chunks grow the buffers
				if _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(1500, func() {
				if _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			})
			// Each chunk opened costs the decompressor's bookkeeping;
			// per message it rounds to 0.
			if allocs != 0 {
				t.Errorf("Next: %v allocs/op, want 0", allocs)
			}
		})
	}
}

func BenchmarkStreamRead(b *testing.B) {
	for _, c := range chunked(1 << 20) {
		b.Run(c.name, func(b *testing.B) {
			file, _ := writeSample(b, c.opts, 5000, 7)
			b.SetBytes(int64(len(file)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := mcap.NewStreamReader(bytes.NewReader(file), mcap.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := r.Next(); err != nil {
						if errors.Is(err, io.EOF) {
							break
						}
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
}

// A Summary Offset that does not frame a whole group of its opcode is
// refused (the summary CRC zeroed, so that only this check can see it).
func TestSummaryOffsetsChecked(t *testing.T) {
	b, _ := writeSample(t, configs()[2].opts, 50, 8)
	footer := len(b) - 8 - 29
	offsets := binary.LittleEndian.Uint64(b[footer+9+8:])
	for _, edit := range []struct {
		name string
		at   int // byte of the first Summary Offset record's body
		add  uint64
	}{{"length", 1 + 8, 1}, {"start", 1, 9}} {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[footer+9+16:], 0)
		field := int(offsets) + 9 + edit.at
		binary.LittleEndian.PutUint64(c[field:], binary.LittleEndian.Uint64(c[field:])+edit.add)
		if _, err := mcap.NewIndexedReader(bytes.NewReader(c), int64(len(c)), mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) || !strings.Contains(err.Error(), "Summary Offset") {
			t.Errorf("group %s moved: %v", edit.name, err)
		}
	}
	// Untouched but for the zeroed CRC, it reads.
	c := bytes.Clone(b)
	binary.LittleEndian.PutUint32(c[footer+9+16:], 0)
	if _, _, err := indexedAll(c, mcap.Limits{}); err != nil {
		t.Errorf("summary CRC 0 (not written): %v", err)
	}
}

// A filter (channels, log-time window) gives exactly the wanted messages,
// in log-time order, and does not read chunks outside it (a broken one
// there goes unnoticed).
func TestIndexedFilter(t *testing.T) {
	b, want := writeSample(t, configs()[2].opts, 600, 9)
	sorted := sortMsgs(want)
	from, to := sorted[200].Log, sorted[400].Log
	var exp []msg
	for _, m := range want {
		if m.Channel == 7 && m.Log >= from && m.Log <= to {
			exp = append(exp, m)
		}
	}
	// Break the first chunk: outside the window, it must not be read.
	x, _, err := indexedAll(b, mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	first := x.ChunkIndexes()[0]
	if first.MessageEndTime >= from {
		t.Fatalf("the first chunk (to %d) reaches into the window (from %d)", first.MessageEndTime, from)
	}
	b = bytes.Clone(b)
	b[first.ChunkStartOffset+first.ChunkLength-1] ^= 0xff
	if _, _, err := indexedAll(b, mcap.Limits{}); !errors.Is(err, mcap.ErrFormat) {
		t.Fatalf("unfiltered, the broken chunk: %v", err)
	}
	x, err = mcap.NewIndexedReader(bytes.NewReader(b), int64(len(b)), mcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.SetFilter(mcap.Filter{Channels: []uint16{7}, Start: from, End: to}); err != nil {
		t.Fatal(err)
	}
	got, err := drainMsgs(x.Next)
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) < 50 {
		t.Fatalf("only %d messages in the window", len(exp))
	}
	equalMsgs(t, "filtered", sortMsgs(got), sortMsgs(exp))
	inLogOrder(t, "filtered", got)
	if err := x.SetFilter(mcap.Filter{}); !errors.Is(err, mcap.ErrStarted) {
		t.Errorf("SetFilter after Next: %v", err)
	}
}
