package mcap

import (
	"io"
	"testing"
)

// The Writer's buffers stay bounded by the chunk size however long the
// recording: the open chunk, its compressed copy and the per-channel
// message indexes are reused, not grown, from chunk to chunk.
func TestWriterMemoryBounded(t *testing.T) {
	for _, comp := range []Compression{CompressNone, CompressZstd, CompressLZ4} {
		const chunk = 16 << 10
		w, err := NewWriter(io.Discard, Options{Compression: comp, ChunkSize: chunk})
		if err != nil {
			t.Fatal(err)
		}
		for id := uint16(1); id <= 4; id++ {
			if err := w.AddChannel(Channel{ID: id, Topic: "/t"}); err != nil {
				t.Fatal(err)
			}
		}
		m := Message{Data: make([]byte, 300)}
		for i := range 50_000 { // ~16 MB through 16 KiB chunks
			m.ChannelID, m.LogTime = uint16(i%4+1), uint64(i)
			m.Data[i%300] = byte(i)
			if err := w.WriteMessage(&m); err != nil {
				t.Fatal(err)
			}
		}
		if c := cap(w.chunk); c > chunk+4096+512 {
			t.Errorf("%v: open chunk buffer of %d bytes for a %d-byte chunk size", comp, c, chunk)
		}
		if c := cap(w.comp.zbuf); c > 2*chunk {
			t.Errorf("%v: compressed buffer of %d bytes", comp, c)
		}
		for id, ix := range w.idx {
			if c := cap(ix.entries); c > chunk/300 {
				t.Errorf("%v: channel %d's message index holds %d entries", comp, id, c)
			}
		}
		if len(w.t.chunks) < 900 {
			t.Errorf("%v: %d chunks for 16 MB at 16 KiB", comp, len(w.t.chunks))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
