package mcap

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// ErrNoSummary is returned by NewIndexedReader for a file without a
// summary section (written without one, or cut short): read it with a
// StreamReader, or Recover it.
var ErrNoSummary = errors.New("mcap: file has no summary")

// ErrNotIndexed is returned by IndexedReader.Next for a file whose
// summary counts messages but indexes no chunk (messages written outside
// chunks cannot be indexed): read it with a StreamReader.
var ErrNotIndexed = errors.New("mcap: messages are not in indexed chunks")

// IndexedReader reads an MCAP file through its summary: the footer, the
// summary section (CRC checked), then chunk by chunk through the chunk and
// message indexes, every offset and length checked against the file and
// Limits. Messages come chunk by chunk (chunks in order of their first log
// time), each chunk's in log-time order. Its memory is the summary and one
// chunk. Not safe for concurrent use.
type IndexedReader struct {
	r        io.ReaderAt
	size     uint64
	lim      Limits
	header   Header
	footer   Footer
	schemas  map[uint16]*Schema
	channels map[uint16]*Channel
	chunks   []ChunkIndex
	stats    *Statistics
	offsets  []SummaryOffset
	dataEnd  uint64 // offset of the Data End record
	dataCRC  uint32
	dec      decompressor
	idxBuf   []byte
	next     int     // next chunk to load
	active   []*slot // loaded chunks with messages pending
	free     []*slot // slots to reuse
	filter   Filter
	chans    map[uint16]bool // filter.Channels as a set; nil: all
	started  bool
	msg      Message
	err      error
}

// NewIndexedReader reads the header, footer and summary of the size-byte
// file r. A file without a summary returns ErrNoSummary.
func NewIndexedReader(r io.ReaderAt, size int64, lim Limits) (*IndexedReader, error) {
	lim = lim.withDefaults()
	x := &IndexedReader{r: r, size: uint64(max(size, 0)), lim: lim, schemas: map[uint16]*Schema{},
		channels: map[uint16]*Channel{}, dec: decompressor{max: lim.MaxChunk}}
	if err := x.open(); err != nil {
		return nil, fmt.Errorf("mcap: %w", err)
	}
	return x, nil
}

func (x *IndexedReader) readAt(off, n uint64, buf []byte, what string) ([]byte, error) {
	if off > x.size || n > x.size-off {
		return nil, fmt.Errorf("%s at offset %d, %d bytes: past the file's end (%d): %w", what, off, n, x.size, ErrFormat)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := x.r.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("%s at offset %d: %w", what, off, err)
	}
	return buf, nil
}

func (x *IndexedReader) open() error {
	h, err := readStart(&lexer{r: io.NewSectionReader(x.r, 0, int64(x.size)), max: x.lim.MaxRecord})
	if err != nil {
		return err
	}
	x.header = h
	if x.size < 8+footerLen+8 {
		return fmt.Errorf("file of %d bytes has no room for a footer: %w", x.size, ErrNoSummary)
	}
	footAt := x.size - 8 - footerLen
	tail, err := x.readAt(footAt, footerLen+8, nil, "footer")
	if err != nil {
		return err
	}
	if [8]byte(tail[footerLen:]) != Magic {
		return fmt.Errorf("offset %d: no closing magic (a file cut short?): %w", footAt+footerLen, ErrNoSummary)
	}
	if Opcode(tail[0]) != OpFooter || leU64(tail[1:]) != footerLen-recordHeaderLen {
		return fmt.Errorf("offset %d: no Footer record before the closing magic: %w", footAt, ErrFormat)
	}
	f, _ := parseFooter(tail[recordHeaderLen:])
	x.footer = f
	if f.SummaryStart == 0 {
		return ErrNoSummary
	}
	if f.SummaryStart < 8+dataEndLen || f.SummaryStart > footAt || f.SummaryOffsetStart != 0 && (f.SummaryOffsetStart < f.SummaryStart || f.SummaryOffsetStart > footAt) {
		return fmt.Errorf("footer at %d: summary_start %d / summary_offset_start %d out of the file: %w", footAt, f.SummaryStart, f.SummaryOffsetStart, ErrFormat)
	}
	if n := footAt - f.SummaryStart; n > x.lim.MaxSummary {
		return fmt.Errorf("summary of %d bytes over the cap %d (Limits.MaxSummary): %w", n, x.lim.MaxSummary, ErrFormat)
	}
	// The Data End record sits just before the summary.
	x.dataEnd = f.SummaryStart - dataEndLen
	sum, err := x.readAt(x.dataEnd, footAt-x.dataEnd, nil, "summary")
	if err != nil {
		return err
	}
	if Opcode(sum[0]) != OpDataEnd || leU64(sum[1:]) != 4 {
		return fmt.Errorf("offset %d: no Data End record before the summary at %d: %w", x.dataEnd, f.SummaryStart, ErrFormat)
	}
	x.dataCRC = leU32(sum[recordHeaderLen:])
	sum = sum[dataEndLen:]
	if f.SummaryCRC != 0 {
		crc := crc32.Update(crcOf(sum), crc32.IEEETable, tail[:footerLen-4])
		if crc != f.SummaryCRC {
			return fmt.Errorf("summary CRC %08x, footer says %08x: %w", crc, f.SummaryCRC, ErrFormat)
		}
	}
	return x.summary(sum, f)
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (x *IndexedReader) summary(sum []byte, f Footer) error {
	type rec struct {
		at  uint64
		op  Opcode
		end uint64
	}
	var recs []rec
	for pos := 0; pos < len(sum); {
		at := f.SummaryStart + uint64(pos)
		op, body, err := chunkRecord(sum, pos)
		if err != nil {
			return fmt.Errorf("summary at offset %d: %w", at, err)
		}
		pos += recordHeaderLen + len(body)
		if err := x.summaryRecord(op, body, f, at); err != nil {
			return fmt.Errorf("summary: offset %d: %v record: %w", at, op, err)
		}
		recs = append(recs, rec{at, op, f.SummaryStart + uint64(pos)})
	}
	// Each Summary Offset names a whole group: records of its opcode from
	// a record's start to a record's end.
	for _, so := range x.offsets {
		i, found := slices.BinarySearchFunc(recs, so.GroupStart, func(r rec, at uint64) int { return cmp.Compare(r.at, at) })
		end := so.GroupStart + so.GroupLength
		for ; found && i < len(recs) && recs[i].end <= end; i++ {
			if recs[i].op != so.GroupOpcode {
				found = false
			}
		}
		if !found || i == 0 || recs[i-1].end != end {
			return fmt.Errorf("summary: the Summary Offset of %v (%d+%d) is no group of %v records: %w", so.GroupOpcode, so.GroupStart, so.GroupLength, so.GroupOpcode, ErrFormat)
		}
	}
	for i := range x.chunks {
		if err := x.checkChunkIndex(&x.chunks[i]); err != nil {
			return fmt.Errorf("summary: chunk index %d (chunk at %d): %w", i, x.chunks[i].ChunkStartOffset, err)
		}
	}
	slices.SortStableFunc(x.chunks, func(a, b ChunkIndex) int {
		return cmp.Or(cmp.Compare(a.MessageStartTime, b.MessageStartTime), cmp.Compare(a.ChunkStartOffset, b.ChunkStartOffset))
	})
	return nil
}

// putOnce stores v under id in m, refusing (see sameAsKnown) one that
// differs from an entry already there.
func putOnce[T any](m map[uint16]*T, id uint16, v *T, same func(a, b *T) bool, what string) error {
	known, err := sameAsKnown(m, id, v, same, what)
	if err == nil && !known {
		m[id] = v
	}
	return err
}

func (x *IndexedReader) summaryRecord(op Opcode, body []byte, f Footer, at uint64) error {
	inOffsets := f.SummaryOffsetStart != 0 && at >= f.SummaryOffsetStart
	if inOffsets != (op == OpSummaryOffset) {
		return fmt.Errorf("in the wrong part of the summary (offsets start at %d): %w", f.SummaryOffsetStart, ErrFormat)
	}
	switch op {
	case OpSchema:
		s, err := parseSchema(body)
		if err != nil || s.ID == 0 { // ID 0 is invalid; the spec says to ignore it
			return err
		}
		return putOnce(x.schemas, s.ID, &s, sameSchema, "schema")
	case OpChannel:
		c, err := parseChannel(body)
		if err != nil {
			return err
		}
		return putOnce(x.channels, c.ID, &c, sameChannel, "channel")
	case OpChunkIndex:
		ci, err := parseChunkIndex(body)
		x.chunks = append(x.chunks, ci)
		return err
	case OpStatistics:
		st, err := parseStatistics(body)
		x.stats = &st
		return err
	case OpSummaryOffset:
		so, err := parseSummaryOffset(body)
		if err == nil && (so.GroupStart < f.SummaryStart || so.GroupStart > at || so.GroupLength > at-so.GroupStart) {
			return fmt.Errorf("group of %v at %d+%d lies outside the summary: %w", so.GroupOpcode, so.GroupStart, so.GroupLength, ErrFormat)
		}
		x.offsets = append(x.offsets, so)
		return err
	case OpHeader, OpFooter, OpMessage, OpChunk, OpMessageIndex, OpAttachment, OpMetadata, OpDataEnd:
		return fmt.Errorf("not allowed in the summary: %w", ErrFormat)
	}
	return nil
}

func (x *IndexedReader) checkChunkIndex(ci *ChunkIndex) error {
	end := ci.ChunkStartOffset + ci.ChunkLength
	if ci.ChunkStartOffset < 8 || ci.ChunkLength < recordHeaderLen || end < ci.ChunkStartOffset || end > x.dataEnd {
		return fmt.Errorf("chunk at %d+%d lies outside the data section (ends at %d): %w", ci.ChunkStartOffset, ci.ChunkLength, x.dataEnd, ErrFormat)
	}
	if ci.ChunkLength-recordHeaderLen > x.lim.MaxRecord {
		return fmt.Errorf("chunk of %d bytes over the cap %d (Limits.MaxRecord): %w", ci.ChunkLength, x.lim.MaxRecord, ErrFormat)
	}
	if ci.MessageIndexLength > x.lim.MaxRecord {
		return fmt.Errorf("message indexes of %d bytes over the cap %d (Limits.MaxRecord): %w", ci.MessageIndexLength, x.lim.MaxRecord, ErrFormat)
	}
	if ci.MessageIndexLength > x.dataEnd-end {
		return fmt.Errorf("message indexes of %d bytes run past the data section: %w", ci.MessageIndexLength, ErrFormat)
	}
	for ch, off := range ci.MessageIndexOffsets {
		if off < end || off >= end+ci.MessageIndexLength {
			return fmt.Errorf("message index of channel %d at %d is not after the chunk (%d+%d): %w", ch, off, end, ci.MessageIndexLength, ErrFormat)
		}
		if _, ok := x.channels[ch]; !ok {
			return fmt.Errorf("channel %d has no Channel record in the summary: %w", ch, ErrFormat)
		}
	}
	return nil
}

// Header is the file's header record.
func (x *IndexedReader) Header() Header { return x.header }

// Footer is the file's footer record.
func (x *IndexedReader) Footer() Footer { return x.footer }

// Statistics is the summary's Statistics record, nil when it has none.
func (x *IndexedReader) Statistics() *Statistics { return x.stats }

// ChunkIndexes are the summary's chunk indexes, in reading order.
func (x *IndexedReader) ChunkIndexes() []ChunkIndex { return x.chunks }

// Channels returns the summary's channels, by ID.
func (x *IndexedReader) Channels() []*Channel { return byID(x.channels) }

// Schemas returns the summary's schemas, by ID.
func (x *IndexedReader) Schemas() []*Schema { return byID(x.schemas) }

// Channel returns a channel of the summary.
func (x *IndexedReader) Channel(id uint16) (*Channel, bool) { c, ok := x.channels[id]; return c, ok }

// Schema returns a schema of the summary.
func (x *IndexedReader) Schema(id uint16) (*Schema, bool) { s, ok := x.schemas[id]; return s, ok }

// Close releases the decompressors. It does not close the io.ReaderAt.
func (x *IndexedReader) Close() { x.dec.close() }

// VerifyDataCRC reads the data section (the leading magic to the Data End
// record) and checks it against Data End's CRC; a CRC of 0 (not written)
// passes. It reads the whole data section, in 1 MiB pieces.
func (x *IndexedReader) VerifyDataCRC() error {
	if x.dataCRC == 0 {
		return nil
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(x.r, 0, int64(x.dataEnd)), make([]byte, growStep)); err != nil {
		return fmt.Errorf("mcap: data section: %w", err)
	}
	if got := h.Sum32(); got != x.dataCRC {
		return fmt.Errorf("mcap: data section CRC %08x, Data End says %08x: %w", got, x.dataCRC, ErrFormat)
	}
	return nil
}

// Filter restricts an IndexedReader to some channels and a log-time
// window; chunks outside it are not read (by their chunk index: time
// range and the channels their message indexes name).
type Filter struct {
	Channels []uint16 // nil: every channel
	Start    uint64   // first log time, ns (inclusive)
	End      uint64   // last log time, ns (inclusive); 0: no end
}

// ErrStarted is returned by SetFilter after the first Next.
var ErrStarted = errors.New("mcap: reading has started")

// SetFilter restricts the messages Next returns. It must be called before
// the first Next.
func (x *IndexedReader) SetFilter(f Filter) error {
	if x.started {
		return ErrStarted
	}
	x.filter, x.chans = f, nil
	if f.Channels != nil {
		x.chans = make(map[uint16]bool, len(f.Channels))
		for _, c := range f.Channels {
			x.chans[c] = true
		}
	}
	return nil
}

func (x *IndexedReader) wants(ch uint16, logTime uint64) bool {
	return (x.chans == nil || x.chans[ch]) && logTime >= x.filter.Start && (x.filter.End == 0 || logTime <= x.filter.End)
}

// wantsChunk: may the chunk hold a message the filter wants?
func (x *IndexedReader) wantsChunk(ci *ChunkIndex) bool {
	if ci.MessageEndTime < x.filter.Start || x.filter.End != 0 && ci.MessageStartTime > x.filter.End {
		return false
	}
	if x.chans == nil || len(ci.MessageIndexOffsets) == 0 {
		return true
	}
	for ch := range ci.MessageIndexOffsets {
		if x.chans[ch] {
			return true
		}
	}
	return false
}

// maxOverlap bounds how many chunks the indexed reader holds at once to
// merge chunks whose log-time ranges overlap. Past it, messages may come
// out of log-time order (never lost).
const maxOverlap = 64

// slot is one loaded chunk: its buffers, its messages in log-time order
// and the next one to return.
type slot struct {
	at      uint64 // the chunk's file offset
	raw     []byte // the Chunk record as read
	out     []byte // its decompressed records (none: raw is used)
	recs    []byte
	entries []indexEntry
	pos     int
}

// Next returns the next message in log-time order (ties in file order);
// its Data is valid until the next call. It holds the chunks whose time
// ranges overlap the next message's (at most maxOverlap). At the end it
// returns io.EOF. An error sticks.
func (x *IndexedReader) Next() (*Message, error) {
	if x.err != nil {
		return nil, x.err
	}
	x.started = true
	if len(x.chunks) == 0 && x.stats != nil && x.stats.MessageCount > 0 {
		x.err = ErrNotIndexed
		return nil, x.err
	}
	for {
		// Load every chunk that may hold a message at or before the
		// earliest one pending.
		for x.next < len(x.chunks) && len(x.active) < maxOverlap {
			ci := &x.chunks[x.next]
			if len(x.active) > 0 && ci.MessageStartTime > x.head().entries[x.head().pos].logTime {
				break
			}
			x.next++
			if !x.wantsChunk(ci) {
				continue
			}
			if err := x.load(ci); err != nil {
				x.err = fmt.Errorf("mcap: chunk at offset %d: %w", ci.ChunkStartOffset, err)
				return nil, x.err
			}
		}
		if len(x.active) > 0 {
			break
		}
		if x.next >= len(x.chunks) {
			return nil, io.EOF
		}
	}
	h := x.head()
	e := h.entries[h.pos]
	h.pos++
	_, body, _ := chunkRecord(h.recs, int(e.offset)) // checked by load
	_ = parseMessage(body, &x.msg)
	if h.pos == len(h.entries) {
		// Done: its buffers serve the next chunk loaded (after this
		// message's Data is no longer valid).
		x.active = slices.DeleteFunc(x.active, func(s *slot) bool { return s == h })
		x.free = append(x.free, h)
	}
	return &x.msg, nil
}

// head is the active chunk with the earliest pending message.
func (x *IndexedReader) head() *slot {
	best := x.active[0]
	for _, s := range x.active[1:] {
		a, b := s.entries[s.pos], best.entries[best.pos]
		if a.logTime < b.logTime || a.logTime == b.logTime && s.at < best.at {
			best = s
		}
	}
	return best
}

// load reads, checks and expands a chunk into a slot, and orders its
// messages by log time, checking that its message indexes list every
// message. A chunk without messages is not kept.
func (x *IndexedReader) load(ci *ChunkIndex) error {
	s := &slot{}
	if n := len(x.free); n > 0 {
		s = x.free[n-1]
		x.free = x.free[:n-1]
	}
	s.at, s.pos, s.entries = ci.ChunkStartOffset, 0, s.entries[:0]
	if err := x.fill(ci, s); err != nil {
		return err
	}
	if len(s.entries) == 0 {
		x.free = append(x.free, s)
		return nil
	}
	x.active = append(x.active, s)
	return nil
}

func (x *IndexedReader) fill(ci *ChunkIndex, s *slot) error {
	b, err := x.readAt(ci.ChunkStartOffset, ci.ChunkLength, s.raw, "chunk")
	if err != nil {
		return err
	}
	s.raw = b
	if Opcode(b[0]) != OpChunk || leU64(b[1:]) != ci.ChunkLength-recordHeaderLen {
		return fmt.Errorf("the chunk index points at a %v record of %d bytes, not a Chunk of %d: %w", Opcode(b[0]), leU64(b[1:]), ci.ChunkLength-recordHeaderLen, ErrFormat)
	}
	h, err := parseChunk(b[recordHeaderLen:])
	if err != nil {
		return err
	}
	if h.compression != ci.Compression || h.usize != ci.UncompressedSize || uint64(len(h.records)) != ci.CompressedSize {
		return fmt.Errorf("chunk (%v, %d→%d bytes) differs from its index (%v, %d→%d): %w", h.compression, len(h.records), h.usize, ci.Compression, ci.CompressedSize, ci.UncompressedSize, ErrFormat)
	}
	recs, err := expandChunk(&x.dec, h, &s.out)
	if err != nil {
		return err
	}
	s.recs = recs
	// Every message of the chunk, by a scan; the indexes must list them.
	var m Message
	for pos := 0; pos < len(recs); {
		op, body, err := chunkRecord(recs, pos)
		if err != nil {
			return err
		}
		if op == OpMessage {
			if err := parseMessage(body, &m); err != nil {
				return fmt.Errorf("message at chunk offset %d: %w", pos, err)
			}
			if _, ok := x.channels[m.ChannelID]; !ok {
				return fmt.Errorf("message at chunk offset %d on channel %d, which the summary lacks: %w", pos, m.ChannelID, ErrFormat)
			}
			if m.LogTime < ci.MessageStartTime || m.LogTime > ci.MessageEndTime {
				return fmt.Errorf("message at chunk offset %d logged at %d, outside the chunk's range %d..%d: %w", pos, m.LogTime, ci.MessageStartTime, ci.MessageEndTime, ErrFormat)
			}
			s.entries = append(s.entries, indexEntry{logTime: m.LogTime, offset: uint64(pos)})
		}
		pos += recordHeaderLen + len(body)
	}
	if len(ci.MessageIndexOffsets) > 0 {
		if err := x.checkIndexes(ci, s); err != nil {
			return err
		}
	}
	if x.chans != nil || x.filter.Start != 0 || x.filter.End != 0 {
		s.entries = slices.DeleteFunc(s.entries, func(e indexEntry) bool {
			_, body, _ := chunkRecord(recs, int(e.offset))
			return !x.wants(uint16(body[0])|uint16(body[1])<<8, e.logTime)
		})
	}
	slices.SortStableFunc(s.entries, func(a, b indexEntry) int {
		return cmp.Or(cmp.Compare(a.logTime, b.logTime), cmp.Compare(a.offset, b.offset))
	})
	return nil
}

// checkIndexes reads the chunk's message indexes and checks that they
// list exactly the messages the scan found, at their log times.
func (x *IndexedReader) checkIndexes(ci *ChunkIndex, s *slot) error {
	recs := s.recs
	start := ci.ChunkStartOffset + ci.ChunkLength
	idx, err := x.readAt(start, ci.MessageIndexLength, x.idxBuf, "message indexes")
	if err != nil {
		return err
	}
	x.idxBuf = idx
	byOffset := make(map[uint64]uint64, len(s.entries))
	for _, e := range s.entries {
		byOffset[e.offset] = e.logTime
	}
	n := 0
	var entries []indexEntry
	for pos := 0; pos < len(idx); {
		at := start + uint64(pos)
		op, body, err := chunkRecord(idx, pos)
		if err != nil {
			return fmt.Errorf("message indexes at %d: %w", at, err)
		}
		pos += recordHeaderLen + len(body)
		if op != OpMessageIndex {
			continue
		}
		var ch uint16
		ch, entries, err = parseMessageIndex(body, entries[:0])
		if err != nil {
			return fmt.Errorf("message index at %d: %w", at, err)
		}
		if off, ok := ci.MessageIndexOffsets[ch]; !ok || off != at {
			continue // not this chunk's index of ch (the chunk index names which)
		}
		for _, e := range entries {
			lt, ok := byOffset[e.offset]
			if !ok || lt != e.logTime {
				return fmt.Errorf("message index of channel %d at %d: entry (%d, offset %d) is no message of the chunk: %w", ch, at, e.logTime, e.offset, ErrFormat)
			}
			var m Message
			_, body, _ := chunkRecord(recs, int(e.offset))
			_ = parseMessage(body, &m)
			if m.ChannelID != ch {
				return fmt.Errorf("message index of channel %d at %d: offset %d holds a message of channel %d: %w", ch, at, e.offset, m.ChannelID, ErrFormat)
			}
		}
		n += len(entries)
	}
	if n != len(s.entries) {
		return fmt.Errorf("message indexes list %d messages, the chunk holds %d: %w", n, len(s.entries), ErrFormat)
	}
	return nil
}
