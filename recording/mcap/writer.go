package mcap

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// DefaultChunkSize is the chunk size of Options.ChunkSize 0: records
// (uncompressed) a chunk holds before it is compressed and written.
const DefaultChunkSize = 1 << 20

// Options configure a Writer.
type Options struct {
	Header      Header
	Compression Compression // of chunks; ignored when Unchunked
	// ChunkSize bounds the open chunk (uncompressed bytes; 0:
	// DefaultChunkSize). A chunk is written when the next message would
	// take it past ChunkSize, so a crash loses at most one chunk. A
	// message larger than ChunkSize gets a chunk of its own.
	ChunkSize int
	// Unchunked writes every message as a record of its own at once
	// (nothing buffered; no message index, as the spec has none for
	// messages outside chunks).
	Unchunked bool
}

// Writer writes an MCAP file to an io.Writer, streaming: schemas and
// channels as they are added, chunks as they fill. Its memory is the open
// chunk (Options.ChunkSize), its compressed form, and the summary it will
// write (one chunk index per chunk, one entry per schema and channel).
// Close writes the summary; a Writer that never reaches Close leaves a
// file readable up to its last complete chunk (Recover completes it).
// Not safe for concurrent use; calls block on the underlying writer.
type Writer struct {
	out     countingWriter
	opts    Options
	t       tally
	comp    *compressor
	chunk   []byte
	first   uint64 // log time range of the open chunk
	last    uint64
	idx     map[uint16]*chanIndex
	order   []uint16 // channels with messages in the open chunk, first use first
	scratch []byte
	closed  bool
}

type chanIndex struct {
	entries  []indexEntry
	unsorted bool
}

// NewWriter writes the magic and the header to w and returns the Writer.
func NewWriter(w io.Writer, opts Options) (*Writer, error) {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.Unchunked {
		opts.Compression = CompressNone
	}
	comp, err := newCompressor(opts.Compression)
	if err != nil {
		return nil, err
	}
	wr := &Writer{out: countingWriter{w: w}, opts: opts, t: newTally(), comp: comp, idx: map[uint16]*chanIndex{}}
	if !opts.Unchunked {
		wr.chunk = make([]byte, 0, min(opts.ChunkSize, 64<<20)+4096)
	}
	wr.scratch = append(wr.scratch[:0], Magic[:]...)
	wr.scratch = appendHeader(wr.scratch, opts.Header)
	if err := wr.out.write(wr.scratch); err != nil {
		comp.close()
		return nil, err
	}
	return wr, nil
}

// ErrClosed is returned by a Writer's calls after Close.
var ErrClosed = errors.New("mcap: writer closed")

// AddSchema writes a Schema record. Its ID must not be 0; adding the same
// ID again is allowed only with identical fields (and writes nothing).
func (w *Writer) AddSchema(s Schema) error {
	if err := w.usable(); err != nil {
		return err
	}
	if s.ID == 0 {
		return fmt.Errorf("mcap: schema %q: ID 0 is reserved for \"no schema\"", s.Name)
	}
	if !fitsU32(len(s.Data)) || !fitsU32(len(s.Name)) || !fitsU32(len(s.Encoding)) {
		return fmt.Errorf("mcap: schema %q: a field is over 4 GiB", s.Name)
	}
	return writeNew(w, &s, w.t.addSchema, appendSchema)
}

// writeNew tallies v with add and writes its record (encoded by enc into
// w.scratch) only when add says it is new: the tail AddSchema and
// AddChannel share.
func writeNew[T any](w *Writer, v *T, add func(T) (bool, error), enc func([]byte, *T) []byte) error {
	added, err := add(*v)
	if err != nil || !added {
		return err
	}
	w.scratch = enc(w.scratch[:0], v)
	return w.out.write(w.scratch)
}

// AddChannel writes a Channel record. Its schema (unless 0) must have been
// added; adding the same ID again is allowed only with identical fields.
func (w *Writer) AddChannel(c Channel) error {
	if err := w.usable(); err != nil {
		return err
	}
	return writeNew(w, &c, w.t.addChannel, appendChannel)
}

// WriteAttachment writes an Attachment record (with its CRC) at once, at
// the top level of the data section, and indexes it in the summary. The
// Writer holds a copy of it only while writing.
func (w *Writer) WriteAttachment(a Attachment) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !fitsU32(len(a.Name)) || !fitsU32(len(a.MediaType)) {
		return fmt.Errorf("mcap: attachment %q: a field is over 4 GiB", a.Name)
	}
	at := w.out.n
	rec := appendAttachment(nil, &a)
	if err := w.out.write(rec); err != nil {
		return err
	}
	w.t.attach = append(w.t.attach, attachmentIndex{offset: at, length: uint64(len(rec)), logTime: a.LogTime,
		createTime: a.CreateTime, dataSize: uint64(len(a.Data)), name: a.Name, mediaType: a.MediaType})
	w.t.stats.AttachmentCount++
	return nil
}

// WriteMetadata writes a Metadata record (name and key/value pairs) at
// once, at the top level of the data section, and indexes it in the
// summary.
func (w *Writer) WriteMetadata(name string, kv map[string]string) error {
	if err := w.usable(); err != nil {
		return err
	}
	at := w.out.n
	w.scratch = appendMetadata(w.scratch[:0], name, kv)
	if err := w.out.write(w.scratch); err != nil {
		return err
	}
	w.t.meta = append(w.t.meta, metadataIndex{offset: at, length: uint64(len(w.scratch)), name: name})
	w.t.stats.MetadataCount++
	return nil
}

// WriteMessage appends m to the open chunk (writing the chunk first when m
// would take it past ChunkSize), or writes it at once when Unchunked. The
// Writer copies m.Data: the caller may reuse it on return. Its channel
// must have been added. Steady state: 0 allocations (the chunk and index
// buffers are reused).
func (w *Writer) WriteMessage(m *Message) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !w.t.hasChannel(m.ChannelID) {
		return fmt.Errorf("mcap: message on channel %d: no such channel (AddChannel first)", m.ChannelID)
	}
	w.t.countMessage(m.ChannelID, m.LogTime)
	if w.opts.Unchunked {
		w.scratch = appendMessageHeader(w.scratch[:0], m)
		if err := w.out.write(w.scratch); err != nil {
			return err
		}
		return w.out.write(m.Data)
	}
	recLen := recordHeaderLen + messageFixedLen + len(m.Data)
	if len(w.chunk) > 0 && len(w.chunk)+recLen > w.opts.ChunkSize {
		if err := w.flushChunk(); err != nil {
			return err
		}
	}
	off := uint64(len(w.chunk))
	w.chunk = appendMessageHeader(w.chunk, m)
	w.chunk = append(w.chunk, m.Data...)
	if off == 0 || m.LogTime < w.first {
		w.first = m.LogTime
	}
	if off == 0 || m.LogTime > w.last {
		w.last = m.LogTime
	}
	ci := w.idx[m.ChannelID]
	if ci == nil {
		ci = &chanIndex{}
		w.idx[m.ChannelID] = ci
	}
	if len(ci.entries) == 0 {
		w.order = append(w.order, m.ChannelID)
	} else if ci.entries[len(ci.entries)-1].logTime > m.LogTime {
		ci.unsorted = true
	}
	ci.entries = append(ci.entries, indexEntry{logTime: m.LogTime, offset: off})
	if len(w.chunk) >= w.opts.ChunkSize {
		return w.flushChunk()
	}
	return nil
}

// Flush writes the open chunk (if any) and its message indexes, so that
// everything written so far survives the process being killed. It does
// not sync the underlying file: against power loss, Sync the file after.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.flushChunk()
}

// Offset is the number of bytes written to the underlying writer so far.
func (w *Writer) Offset() uint64 { return w.out.n }

// Close writes the open chunk, the Data End record, the summary (schemas,
// channels, chunk indexes, statistics), the summary offsets, the footer
// and the closing magic. It does not close the underlying writer.
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		return err
	}
	defer w.comp.close()
	if err := w.flushChunk(); err != nil {
		return err
	}
	w.closed = true
	return writeTail(&w.out, &w.t, w.scratch[:0])
}

func (w *Writer) usable() error {
	if w.closed {
		return ErrClosed
	}
	return w.out.err
}

func (w *Writer) flushChunk() error {
	if len(w.chunk) == 0 {
		return nil
	}
	crc := crcOf(w.chunk)
	comp, err := w.comp.compress(w.chunk)
	if err != nil {
		w.out.err = err
		return err
	}
	start := w.out.n
	name := string(w.opts.Compression)
	b := append(w.scratch[:0], byte(OpChunk))
	b = appendU64(b, uint64(8+8+8+4+4+len(name)+8+len(comp)))
	b = appendU64(b, w.first)
	b = appendU64(b, w.last)
	b = appendU64(b, uint64(len(w.chunk)))
	b = appendU32(b, crc)
	b = appendString(b, name)
	b = appendU64(b, uint64(len(comp)))
	if err := w.out.write(b); err != nil {
		return err
	}
	if err := w.out.write(comp); err != nil {
		return err
	}
	ci := ChunkIndex{MessageStartTime: w.first, MessageEndTime: w.last, ChunkStartOffset: start,
		ChunkLength: w.out.n - start, MessageIndexOffsets: make(map[uint16]uint64, len(w.order)),
		Compression: w.opts.Compression, CompressedSize: uint64(len(comp)), UncompressedSize: uint64(len(w.chunk))}
	idxStart := w.out.n
	for _, ch := range w.order {
		e := w.idx[ch]
		if e.unsorted {
			slices.SortStableFunc(e.entries, func(a, b indexEntry) int { return compareU64(a.logTime, b.logTime) })
		}
		ci.MessageIndexOffsets[ch] = w.out.n
		b = append(b[:0], byte(OpMessageIndex))
		b = appendU64(b, uint64(2+4+16*len(e.entries)))
		b = appendU16(b, ch)
		b = appendU32(b, uint32(16*len(e.entries)))
		for _, x := range e.entries {
			b = appendU64(b, x.logTime)
			b = appendU64(b, x.offset)
		}
		if err := w.out.write(b); err != nil {
			return err
		}
		e.entries, e.unsorted = e.entries[:0], false
	}
	w.scratch = b[:0]
	ci.MessageIndexLength = w.out.n - idxStart
	w.t.addChunk(ci)
	w.chunk, w.order = w.chunk[:0], w.order[:0]
	return nil
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// countingWriter counts and CRCs what it writes; its first error sticks.
type countingWriter struct {
	w   io.Writer
	n   uint64
	crc uint32
	err error
}

func (c *countingWriter) write(p []byte) error {
	if c.err != nil {
		return c.err
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
	if err != nil {
		c.err = fmt.Errorf("mcap: write at offset %d: %w", c.n, err)
	}
	return c.err
}

// tally is what a summary says, built while a data section is written
// (Writer) or read back (Recover).
type tally struct {
	schemas  []Schema
	schemaAt map[uint16]int
	channels []Channel
	chanAt   map[uint16]int
	chunks   []ChunkIndex
	attach   []attachmentIndex
	meta     []metadataIndex
	stats    Statistics
}

// attachmentIndex and metadataIndex are the summary's pointers to the
// Attachment and Metadata records.
type attachmentIndex struct {
	offset, length, logTime, createTime, dataSize uint64
	name, mediaType                               string
}

type metadataIndex struct {
	offset, length uint64
	name           string
}

func newTally() tally {
	return tally{schemaAt: map[uint16]int{}, chanAt: map[uint16]int{},
		stats: Statistics{ChannelMessageCounts: map[uint16]uint64{}}}
}

func (t *tally) addSchema(s Schema) (bool, error) {
	if i, ok := t.schemaAt[s.ID]; ok {
		if !sameSchema(&t.schemas[i], &s) {
			return false, fmt.Errorf("mcap: schema %d (%q) added again with other fields", s.ID, s.Name)
		}
		return false, nil
	}
	s.Data = slices.Clone(s.Data)
	t.schemaAt[s.ID] = len(t.schemas)
	t.schemas = append(t.schemas, s)
	t.stats.SchemaCount++
	return true, nil
}

func (t *tally) addChannel(c Channel) (bool, error) {
	if c.SchemaID != 0 {
		if _, ok := t.schemaAt[c.SchemaID]; !ok {
			return false, fmt.Errorf("mcap: channel %d (%q): schema %d was not added", c.ID, c.Topic, c.SchemaID)
		}
	}
	if i, ok := t.chanAt[c.ID]; ok {
		if !sameChannel(&t.channels[i], &c) {
			return false, fmt.Errorf("mcap: channel %d (%q) added again with other fields", c.ID, c.Topic)
		}
		return false, nil
	}
	t.chanAt[c.ID] = len(t.channels)
	t.channels = append(t.channels, c)
	t.stats.ChannelCount++
	return true, nil
}

func (t *tally) hasChannel(id uint16) bool { _, ok := t.chanAt[id]; return ok }

func (t *tally) countMessage(ch uint16, logTime uint64) {
	s := &t.stats
	if s.MessageCount == 0 || logTime < s.MessageStartTime {
		s.MessageStartTime = logTime
	}
	if s.MessageCount == 0 || logTime > s.MessageEndTime {
		s.MessageEndTime = logTime
	}
	s.MessageCount++
	s.ChannelMessageCounts[ch]++
}

func (t *tally) addChunk(ci ChunkIndex) {
	t.chunks = append(t.chunks, ci)
	t.stats.ChunkCount++
}

func sameSchema(a, b *Schema) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Encoding == b.Encoding && string(a.Data) == string(b.Data)
}

func sameChannel(a, b *Channel) bool {
	if a.ID != b.ID || a.SchemaID != b.SchemaID || a.Topic != b.Topic || a.MessageEncoding != b.MessageEncoding || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// writeTail ends a data section whose bytes out has counted and CRCed:
// Data End (the data section's CRC, from the leading magic on), the
// summary grouped by opcode, one Summary Offset per group, the footer
// with the summary's CRC, and the closing magic.
func writeTail(out *countingWriter, t *tally, b []byte) error {
	if err := out.write(appendDataEnd(b[:0], out.crc)); err != nil {
		return err
	}
	summaryStart := out.n
	out.crc = 0
	var offsets []SummaryOffset
	group := func(op Opcode, n int, add func(b []byte, i int) []byte) error {
		if n == 0 {
			return nil
		}
		start := out.n
		for i := range n {
			b = add(b[:0], i)
			if err := out.write(b); err != nil {
				return err
			}
		}
		offsets = append(offsets, SummaryOffset{GroupOpcode: op, GroupStart: start, GroupLength: out.n - start})
		return nil
	}
	stats := t.stats
	for _, err := range []error{
		group(OpSchema, len(t.schemas), func(b []byte, i int) []byte { return appendSchema(b, &t.schemas[i]) }),
		group(OpChannel, len(t.channels), func(b []byte, i int) []byte { return appendChannel(b, &t.channels[i]) }),
		group(OpChunkIndex, len(t.chunks), func(b []byte, i int) []byte { return appendChunkIndex(b, &t.chunks[i]) }),
		group(OpAttachmentIndex, len(t.attach), func(b []byte, i int) []byte { return appendAttachmentIndex(b, &t.attach[i]) }),
		group(OpMetadataIndex, len(t.meta), func(b []byte, i int) []byte { return appendMetadataIndex(b, &t.meta[i]) }),
		group(OpStatistics, 1, func(b []byte, _ int) []byte { return appendStatistics(b, &stats) }),
	} {
		if err != nil {
			return err
		}
	}
	offsetStart := out.n
	for _, so := range offsets {
		if err := out.write(appendSummaryOffset(b[:0], so)); err != nil {
			return err
		}
	}
	b = append(b[:0], byte(OpFooter))
	b = appendU64(b, 8+8+4)
	b = appendU64(b, summaryStart)
	b = appendU64(b, offsetStart)
	if err := out.write(b); err != nil {
		return err
	}
	b = appendU32(b[:0], out.crc)
	b = append(b, Magic[:]...)
	return out.write(b)
}
