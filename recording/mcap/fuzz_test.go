package mcap_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hilrig/hilrig/recording/mcap"
)

// fuzzLimits keep a fuzzed file's allocations small.
var fuzzLimits = mcap.Limits{MaxRecord: 1 << 20, MaxChunk: 1 << 20, MaxSummary: 1 << 20}

// FuzzReaders: any bytes through the stream reader, the indexed reader and
// Recover: no panic, errors are ErrFormat or ErrTruncated (or the index's
// own), and whatever Recover writes reads back whole through both readers
// with the messages it reported. Seeds: a file of each way of writing,
// whole and cut.
func FuzzReaders(f *testing.F) {
	for i, c := range configs() {
		opts := c.opts
		opts.ChunkSize = 512
		b, _ := writeSample(f, opts, 12, uint64(i))
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		known := func(err error) bool {
			return err == nil || errors.Is(err, mcap.ErrFormat) || errors.Is(err, mcap.ErrTruncated) ||
				errors.Is(err, mcap.ErrNoSummary) || errors.Is(err, mcap.ErrNotIndexed)
		}
		if _, _, err := streamAll(b, fuzzLimits); !known(err) {
			t.Fatalf("stream: %v", err)
		}
		if _, _, err := indexedAll(b, fuzzLimits); !known(err) {
			t.Fatalf("indexed: %v", err)
		}
		var out bytes.Buffer
		rep, err := mcap.Recover(&out, bytes.NewReader(b), fuzzLimits)
		if err != nil {
			if !known(err) {
				t.Fatalf("recover: %v", err)
			}
			return
		}
		_, got, err := streamAll(out.Bytes(), fuzzLimits)
		if err != nil {
			t.Fatalf("the recovered file (stop %v): %v", rep.Stop, err)
		}
		if uint64(len(got)) != rep.Messages {
			t.Fatalf("the recovered file holds %d messages, recovery said %d", len(got), rep.Messages)
		}
		if _, _, err := indexedAll(out.Bytes(), fuzzLimits); err != nil && !errors.Is(err, mcap.ErrNotIndexed) {
			t.Fatalf("the recovered file, indexed: %v", err)
		}
	})
}

// FuzzChunkPayload: a well-formed file whose one chunk carries fuzzed
// compressed bytes under each compression: the readers refuse or read it,
// never panic or over-allocate.
func FuzzChunkPayload(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint32(0))
	f.Add([]byte("\x28\xb5\x2f\xfd\x00\x58\x00\x00"), uint8(1), uint32(8))
	f.Add([]byte("\x04\x22\x4d\x18\x64\x40\xa7\x00\x00\x00\x00"), uint8(2), uint32(0))
	f.Fuzz(func(t *testing.T, payload []byte, kind uint8, usize uint32) {
		comp := []mcap.Compression{mcap.CompressNone, mcap.CompressZstd, mcap.CompressLZ4}[kind%3]
		b := append([]byte(nil), mcap.Magic[:]...)
		b = append(b, 0x01, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		body := le64(nil, 1)
		body = le64(body, 2)
		body = le64(body, uint64(usize))
		body = append(body, 0, 0, 0, 0) // no CRC
		body = append(body, byte(len(comp)), 0, 0, 0)
		body = append(body, comp...)
		body = le64(body, uint64(len(payload)))
		body = append(body, payload...)
		b = append(b, 0x06)
		b = le64(b, uint64(len(body)))
		b = append(b, body...)
		s, err := mcap.NewStreamReader(bytes.NewReader(b), fuzzLimits)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for {
			_, err := s.Next()
			if err != nil {
				if err == io.EOF || !(errors.Is(err, mcap.ErrFormat) || errors.Is(err, mcap.ErrTruncated)) {
					t.Fatalf("%v", err)
				}
				return
			}
		}
	})
}

func le64(b []byte, v uint64) []byte {
	for i := range 8 {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}
