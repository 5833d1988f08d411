package mcap

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Limits cap what a reader allocates for a file it does not trust. A
// record, chunk or summary over its cap is refused with ErrFormat naming
// it, before anything of that size is allocated.
type Limits struct {
	MaxRecord  uint64 // largest record read whole (compressed chunk included), and a chunk's message indexes together; 0: 256 MiB
	MaxChunk   uint64 // largest uncompressed chunk; 0: 256 MiB
	MaxSummary uint64 // largest summary section (indexed reader); 0: 64 MiB
}

func (l Limits) withDefaults() Limits {
	if l.MaxRecord == 0 {
		l.MaxRecord = 256 << 20
	}
	if l.MaxChunk == 0 {
		l.MaxChunk = 256 << 20
	}
	if l.MaxSummary == 0 {
		l.MaxSummary = 64 << 20
	}
	return l
}

// growStep is how far a record buffer grows per read, so a length field
// that lies (a cut or corrupt file) costs at most the bytes really there
// plus one step.
const growStep = 1 << 20

// lexer reads top-level records from a stream, counting offsets and the
// CRC of every byte read.
type lexer struct {
	r        io.Reader
	off      uint64
	crc      uint32
	startCRC uint32 // crc before the current record
	hdr      [recordHeaderLen]byte
	buf      []byte
	max      uint64
}

func (l *lexer) read(p []byte) (int, error) {
	n, err := io.ReadFull(l.r, p)
	l.crc = crc32.Update(l.crc, crc32.IEEETable, p[:n])
	l.off += uint64(n)
	return n, err
}

// next reads one record; body is valid until the next call. A stream that
// ends exactly between records returns io.EOF; one that ends inside a
// record returns ErrTruncated naming where.
func (l *lexer) next() (op Opcode, body []byte, start uint64, err error) {
	start, l.startCRC = l.off, l.crc
	n, err := l.read(l.hdr[:])
	if n == 0 && errors.Is(err, io.EOF) {
		return 0, nil, start, io.EOF
	}
	if err != nil {
		return 0, nil, start, fmt.Errorf("offset %d: record header (%d of 9 bytes): %w", start, n, truncOr(err))
	}
	op = Opcode(l.hdr[0])
	size := leU64(l.hdr[1:])
	if size > l.max {
		return op, nil, start, fmt.Errorf("offset %d: %v record of %d bytes, over the cap %d (Limits.MaxRecord): %w", start, op, size, l.max, ErrFormat)
	}
	l.buf = l.buf[:0]
	for uint64(len(l.buf)) < size {
		step := min(size-uint64(len(l.buf)), growStep)
		l.buf = slices.Grow(l.buf, int(step))
		at := len(l.buf)
		l.buf = l.buf[:at+int(step)]
		if n, err := l.read(l.buf[at:]); err != nil {
			return op, nil, start, fmt.Errorf("offset %d: %v record: %d of %d bytes: %w", start, op, at+n, size, truncOr(err))
		}
	}
	return op, l.buf, start, nil
}

func truncOr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}

func leU64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// readStart checks the leading magic and reads the Header record.
func readStart(l *lexer) (Header, error) {
	var m [8]byte
	if n, err := l.read(m[:]); err != nil {
		return Header{}, fmt.Errorf("mcap: leading magic (%d of 8 bytes): %w", n, truncOr(err))
	}
	if m != Magic {
		return Header{}, fmt.Errorf("mcap: offset 0: leading magic % x is not MCAP's: %w", m, ErrFormat)
	}
	op, body, start, err := l.next()
	if err != nil {
		return Header{}, fmt.Errorf("mcap: header: %w", truncOr(err))
	}
	if op != OpHeader {
		return Header{}, fmt.Errorf("mcap: offset %d: first record is %v, want Header: %w", start, op, ErrFormat)
	}
	h, err := parseHeader(body)
	if err != nil {
		return Header{}, fmt.Errorf("mcap: offset %d: Header: %w", start, err)
	}
	return h, nil
}

// ChunkTally counts a file's chunks of one compression.
type ChunkTally struct {
	Count            int
	CompressedSize   uint64
	UncompressedSize uint64
}

// Seen is what a StreamReader has read so far.
type Seen struct {
	Messages        uint64
	ChannelMessages map[uint16]uint64
	StartTime       uint64 // log time range of the messages read, ns
	EndTime         uint64
	Chunks          map[Compression]ChunkTally
	Attachments     int
	Metadata        int
	DataEnd         bool        // the Data End record was read (and its CRC checked)
	Statistics      *Statistics // the summary's, when the file has one
	Footer          *Footer     // set once the file was read to its end
}

// StreamReader reads an MCAP file front to back from any io.Reader:
// records outside and inside chunks, every CRC (chunks, attachments, the
// data section, the summary) checked, every length checked against the
// record it sits in and against Limits. Its memory is one record and one
// uncompressed chunk. Not safe for concurrent use.
type StreamReader struct {
	lx       lexer
	lim      Limits
	header   Header
	schemas  map[uint16]*Schema
	channels map[uint16]*Channel
	dec      decompressor
	chunk    []byte // records of the chunk being read
	out      []byte // decompression buffer
	chunkPos int
	chunkAt  uint64 // its file offset
	msg      Message
	seen     Seen
	summary  bool   // past Data End
	sumStart uint64 // file offset just after Data End
	done     bool
	err      error
}

// NewStreamReader reads the magic and the header from r.
func NewStreamReader(r io.Reader, lim Limits) (*StreamReader, error) {
	lim = lim.withDefaults()
	s := &StreamReader{lx: lexer{r: r, max: lim.MaxRecord}, lim: lim, schemas: map[uint16]*Schema{},
		channels: map[uint16]*Channel{}, dec: decompressor{max: lim.MaxChunk},
		seen: Seen{ChannelMessages: map[uint16]uint64{}, Chunks: map[Compression]ChunkTally{}}}
	h, err := readStart(&s.lx)
	if err != nil {
		return nil, err
	}
	s.header = h
	return s, nil
}

// Header is the file's header record.
func (s *StreamReader) Header() Header { return s.header }

// Schema returns a schema read so far.
func (s *StreamReader) Schema(id uint16) (*Schema, bool) { x, ok := s.schemas[id]; return x, ok }

// Channel returns a channel read so far.
func (s *StreamReader) Channel(id uint16) (*Channel, bool) { x, ok := s.channels[id]; return x, ok }

// Channels returns the channels read so far, by ID.
func (s *StreamReader) Channels() []*Channel { return byID(s.channels) }

// Schemas returns the schemas read so far, by ID.
func (s *StreamReader) Schemas() []*Schema { return byID(s.schemas) }

// Seen is what has been read so far (a copy of the counters; the maps are
// the reader's).
func (s *StreamReader) Seen() Seen { return s.seen }

// Offset is the number of bytes read from the file.
func (s *StreamReader) Offset() uint64 { return s.lx.off }

// Close releases the decompressors. It does not close the io.Reader.
func (s *StreamReader) Close() { s.dec.close() }

func byID[T any](m map[uint16]*T) []*T {
	out := make([]*T, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// Next returns the next message, in file order. Its Data is valid until
// the next call. At the file's end (footer and closing magic read) it
// returns io.EOF; a file cut short returns an error wrapping ErrTruncated
// after every message before the cut, and a malformed one ErrFormat. An
// error sticks.
func (s *StreamReader) Next() (*Message, error) {
	if s.err != nil {
		return nil, s.err
	}
	m, err := s.next()
	if err != nil {
		if err != io.EOF {
			err = fmt.Errorf("mcap: %w", err)
		}
		s.err = err
	}
	return m, err
}

func (s *StreamReader) next() (*Message, error) {
	for {
		if s.chunk != nil {
			m, err := s.nextInChunk()
			if m != nil || err != nil {
				return m, err
			}
			continue
		}
		if s.done {
			return nil, io.EOF
		}
		op, body, start, err := s.lx.next()
		if err == io.EOF {
			return nil, fmt.Errorf("offset %d: file ends without a footer: %w", start, ErrTruncated)
		}
		if err != nil {
			return nil, err
		}
		m, err := s.record(op, body, start)
		if err != nil {
			return nil, fmt.Errorf("offset %d: %v record: %w", start, op, err)
		}
		if m != nil {
			return m, nil
		}
	}
}

// record handles one top-level record; a message is returned.
func (s *StreamReader) record(op Opcode, body []byte, start uint64) (*Message, error) {
	if s.summary && (op == OpMessage || op == OpChunk || op == OpMessageIndex || op == OpAttachment || op == OpMetadata || op == OpDataEnd) {
		return nil, fmt.Errorf("not allowed after Data End: %w", ErrFormat)
	}
	switch op {
	case OpHeader:
		return nil, fmt.Errorf("a second Header: %w", ErrFormat)
	case OpSchema, OpChannel:
		return nil, s.define(op, body)
	case OpMessage:
		return s.message(body)
	case OpChunk:
		return nil, s.openChunk(body, start)
	case OpMessageIndex:
		_, _, err := parseMessageIndex(body, nil)
		return nil, err
	case OpAttachment:
		s.seen.Attachments++
		_, err := checkAttachment(body)
		return nil, err
	case OpMetadata:
		s.seen.Metadata++
		c := cursor{b: body}
		c.str("name")
		c.stringMap("metadata")
		return nil, c.err
	case OpDataEnd:
		crc, err := parseDataEnd(body)
		if err != nil {
			return nil, err
		}
		if crc != 0 && crc != s.lx.startCRC {
			return nil, fmt.Errorf("data section CRC %08x, Data End says %08x: %w", s.lx.startCRC, crc, ErrFormat)
		}
		s.summary, s.seen.DataEnd, s.sumStart = true, true, s.lx.off
		s.lx.crc = 0 // from here: the summary's CRC
		return nil, nil
	case OpChunkIndex:
		_, err := parseChunkIndex(body)
		return nil, err
	case OpStatistics:
		st, err := parseStatistics(body)
		s.seen.Statistics = &st
		return nil, err
	case OpSummaryOffset:
		_, err := parseSummaryOffset(body)
		return nil, err
	case OpAttachmentIndex, OpMetadataIndex:
		return nil, nil
	case OpFooter:
		return nil, s.footer(body, start)
	}
	return nil, nil // opcodes the spec reserves for later or for extensions: skipped
}

func (s *StreamReader) define(op Opcode, body []byte) error {
	if op == OpSchema {
		sc, err := parseSchema(body)
		if err != nil || sc.ID == 0 { // ID 0 is invalid; the spec says to ignore it
			return err
		}
		if known, err := sameAsKnown(s.schemas, sc.ID, &sc, sameSchema, "schema"); known || err != nil {
			return err
		}
		s.schemas[sc.ID] = &sc
		return nil
	}
	ch, err := parseChannel(body)
	if err != nil {
		return err
	}
	if known, err := sameAsKnown(s.channels, ch.ID, &ch, sameChannel, "channel"); known || err != nil {
		return err
	}
	if _, ok := s.schemas[ch.SchemaID]; ch.SchemaID != 0 && !ok {
		return fmt.Errorf("channel %d (%q) refers to schema %d, not defined before it: %w", ch.ID, ch.Topic, ch.SchemaID, ErrFormat)
	}
	s.channels[ch.ID] = &ch
	return nil
}

// sameAsKnown reports whether m already holds id; an entry there that
// differs from v is an ErrFormat error naming what and the ID. Both
// readers check repeated Schema and Channel records with it.
func sameAsKnown[T any](m map[uint16]*T, id uint16, v *T, same func(a, b *T) bool, what string) (bool, error) {
	old, ok := m[id]
	if ok && !same(old, v) {
		return true, fmt.Errorf("%s %d differs from the earlier one of that ID: %w", what, id, ErrFormat)
	}
	return ok, nil
}

func (s *StreamReader) message(body []byte) (*Message, error) {
	if err := parseMessage(body, &s.msg); err != nil {
		return nil, err
	}
	if _, ok := s.channels[s.msg.ChannelID]; !ok {
		return nil, fmt.Errorf("message on channel %d, not defined before it: %w", s.msg.ChannelID, ErrFormat)
	}
	sn := &s.seen
	if sn.Messages == 0 || s.msg.LogTime < sn.StartTime {
		sn.StartTime = s.msg.LogTime
	}
	if sn.Messages == 0 || s.msg.LogTime > sn.EndTime {
		sn.EndTime = s.msg.LogTime
	}
	sn.Messages++
	sn.ChannelMessages[s.msg.ChannelID]++
	return &s.msg, nil
}

func (s *StreamReader) openChunk(body []byte, start uint64) error {
	h, recs, err := parseExpandChunk(&s.dec, body, &s.out)
	if err != nil {
		return err
	}
	t := s.seen.Chunks[h.compression]
	t.Count++
	t.CompressedSize += uint64(len(h.records))
	t.UncompressedSize += h.usize
	s.seen.Chunks[h.compression] = t
	s.chunk, s.chunkPos, s.chunkAt = recs, 0, start
	if len(recs) == 0 {
		s.chunk = nil
	}
	return nil
}

// expandChunk decompresses a chunk's records into *dst and checks their
// CRC. Uncompressed records are returned in place.
// parseExpandChunk parses a Chunk record's body and expands its records
// into *dst (see expandChunk).
func parseExpandChunk(d *decompressor, body []byte, dst *[]byte) (chunkHead, []byte, error) {
	h, err := parseChunk(body)
	if err != nil {
		return h, nil, err
	}
	recs, err := expandChunk(d, h, dst)
	return h, recs, err
}

func expandChunk(d *decompressor, h chunkHead, dst *[]byte) ([]byte, error) {
	recs, err := d.decompress(dst, h.compression, h.records, h.usize)
	if err != nil {
		return nil, err
	}
	if got := crcOf(recs); h.crc != 0 && got != h.crc {
		return nil, fmt.Errorf("records' CRC %08x, chunk says %08x: %w", got, h.crc, ErrFormat)
	}
	return recs, nil
}

// chunkRecord reads the record at pos of a chunk's records.
func chunkRecord(recs []byte, pos int) (Opcode, []byte, error) {
	if len(recs)-pos < recordHeaderLen {
		return 0, nil, fmt.Errorf("record at chunk offset %d: %d bytes left for its 9-byte header: %w", pos, len(recs)-pos, ErrFormat)
	}
	op := Opcode(recs[pos])
	n := leU64(recs[pos+1:])
	if n > uint64(len(recs)-pos-recordHeaderLen) {
		return op, nil, fmt.Errorf("%v record at chunk offset %d: length %d, %d bytes left: %w", op, pos, n, len(recs)-pos-recordHeaderLen, ErrFormat)
	}
	return op, recs[pos+recordHeaderLen : pos+recordHeaderLen+int(n)], nil
}

func (s *StreamReader) nextInChunk() (*Message, error) {
	for s.chunkPos < len(s.chunk) {
		pos := s.chunkPos
		op, body, err := chunkRecord(s.chunk, pos)
		if err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %w", s.chunkAt, err)
		}
		s.chunkPos += recordHeaderLen + len(body)
		var m *Message
		switch op {
		case OpSchema, OpChannel:
			err = s.define(op, body)
		case OpMessage:
			m, err = s.message(body)
		default:
			if op < 0x80 && op != 0 && int(op) < len(opNames) {
				err = fmt.Errorf("not allowed in a chunk: %w", ErrFormat)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %v record at chunk offset %d: %w", s.chunkAt, op, pos, err)
		}
		if m != nil {
			return m, nil
		}
	}
	s.chunk = nil
	return nil, nil
}

func (s *StreamReader) footer(body []byte, start uint64) error {
	f, err := parseFooter(body)
	if err != nil {
		return err
	}
	if f.SummaryStart != 0 && (!s.summary || f.SummaryStart != s.sumStart) {
		return fmt.Errorf("summary_start %d, but the summary starts at %d: %w", f.SummaryStart, s.sumStart, ErrFormat)
	}
	if f.SummaryOffsetStart > start || f.SummaryStart > start {
		return fmt.Errorf("summary offsets %d/%d point past the footer at %d: %w", f.SummaryStart, f.SummaryOffsetStart, start, ErrFormat)
	}
	if f.SummaryCRC != 0 {
		crc := s.lx.startCRC
		if !s.summary {
			crc = 0 // no summary: the CRC covers the footer's own fields
		}
		crc = crc32.Update(crc, crc32.IEEETable, s.lx.hdr[:])
		crc = crc32.Update(crc, crc32.IEEETable, body[:16])
		if crc != f.SummaryCRC {
			return fmt.Errorf("summary CRC %08x, footer says %08x: %w", crc, f.SummaryCRC, ErrFormat)
		}
	}
	var m [9]byte
	n, err := s.lx.read(m[:])
	if n < 8 {
		return fmt.Errorf("closing magic (%d of 8 bytes): %w", n, truncOr(err))
	}
	if [8]byte(m[:8]) != Magic {
		return fmt.Errorf("closing magic % x is not MCAP's: %w", m[:8], ErrFormat)
	}
	if n == 9 {
		return fmt.Errorf("bytes after the closing magic: %w", ErrFormat)
	}
	s.seen.Footer = &f
	s.done = true
	return nil
}
