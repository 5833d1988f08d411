package mcap

import (
	"errors"
	"fmt"
	"io"
	"maps"
)

// Recovered says what Recover kept of a file.
type Recovered struct {
	Read     uint64 // bytes of the input read
	Kept     uint64 // bytes of its data section kept (leading magic included)
	Chunks   int
	Messages uint64
	// Stop is why reading stopped before a Data End record: the cut
	// (ErrTruncated) or the first malformed record (ErrFormat). Nil when
	// the data section was whole, the summary then being rewritten.
	Stop error
}

// Recover copies src's data section to dst up to its last complete, valid
// record (a chunk only when its CRC checks; a chunk's message indexes
// only when complete) and writes a new Data End, summary, summary offsets
// and footer after it: a recording cut short by a killed writer becomes a
// whole file. Records are copied byte for byte; the data section CRC is
// recomputed. Memory: one record, one uncompressed chunk, the summary.
// It returns an error only when src is no MCAP file or dst fails.
func Recover(dst io.Writer, src io.Reader, lim Limits) (Recovered, error) {
	lim = lim.withDefaults()
	lx := lexer{r: src, max: lim.MaxRecord}
	var rep Recovered
	if _, err := readStart(&lx); err != nil {
		return rep, err
	}
	out := countingWriter{w: dst}
	buf := append([]byte(nil), Magic[:]...)
	if err := out.write(append(append(buf, lx.hdr[:]...), lx.buf...)); err != nil {
		return rep, err
	}
	rc := recoverer{t: newTally(), out: &out, dec: decompressor{max: lim.MaxChunk}}
	defer rc.dec.close()
	for {
		op, body, start, err := lx.next()
		if err == nil && (op == OpDataEnd || op == OpFooter) {
			break
		}
		if err == nil {
			err = rc.record(op, lx.hdr[:], body)
			if err != nil && out.err == nil {
				err = fmt.Errorf("offset %d: %v record: %w", start, op, err)
			}
		}
		if out.err != nil {
			return rep, out.err
		}
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("offset %d: file ends without Data End: %w", start, ErrTruncated)
		}
		if err != nil {
			rep.Stop = fmt.Errorf("mcap: %w", err)
			break
		}
	}
	rc.endChunk()
	rep.Read, rep.Kept, rep.Chunks, rep.Messages = lx.off, out.n, len(rc.t.chunks), rc.t.stats.MessageCount
	return rep, writeTail(&out, &rc.t, buf[:0])
}

type recoverer struct {
	t   tally
	out *countingWriter
	dec decompressor
	buf []byte
	// The chunk whose message indexes may follow.
	open     *ChunkIndex
	chanSeen map[uint16]int        // messages per channel in the open chunk
	msgAt    map[uint64]indexEntry // its messages by offset: (log time, channel)
}

// record validates one record and copies it (hdr, body) to out.
func (rc *recoverer) record(op Opcode, hdr, body []byte) error {
	if op != OpMessageIndex {
		rc.endChunk()
	}
	at := rc.out.n
	var err error
	switch op {
	case OpSchema, OpChannel:
		err = rc.t.define(op, body)
	case OpMessage:
		err = rc.message(body)
	case OpChunk:
		err = rc.chunk(body, at, uint64(len(hdr)+len(body)))
	case OpMessageIndex:
		if rc.open == nil {
			return nil // an index of no chunk: dropped
		}
		if !rc.indexOK(body) {
			return nil // not an index of this chunk's messages: dropped (the chunk goes unindexed)
		}
		ch := uint16(body[0]) | uint16(body[1])<<8
		rc.open.MessageIndexOffsets[ch] = at
	case OpAttachment:
		var a attachmentIndex
		if a, err = checkAttachment(body); err == nil {
			a.offset, a.length = at, uint64(len(hdr)+len(body))
			rc.t.attach = append(rc.t.attach, a)
			rc.t.stats.AttachmentCount++
		}
	case OpMetadata:
		c := cursor{b: body}
		m := metadataIndex{offset: at, length: uint64(len(hdr) + len(body)), name: c.str("name")}
		c.stringMap("metadata")
		if err = c.err; err == nil {
			rc.t.meta = append(rc.t.meta, m)
			rc.t.stats.MetadataCount++
		}
	case OpHeader, OpChunkIndex, OpAttachmentIndex, OpStatistics, OpMetadataIndex, OpSummaryOffset:
		return fmt.Errorf("not allowed in the data section: %w", ErrFormat)
	}
	if err != nil {
		return err
	}
	if err := rc.out.write(hdr); err != nil {
		return err
	}
	if err := rc.out.write(body); err != nil {
		return err
	}
	if rc.open != nil && op == OpMessageIndex {
		rc.open.MessageIndexLength = rc.out.n - (rc.open.ChunkStartOffset + rc.open.ChunkLength)
	}
	return nil
}

func (rc *recoverer) message(body []byte) error {
	var m Message
	if err := parseMessage(body, &m); err != nil {
		return err
	}
	if !rc.t.hasChannel(m.ChannelID) {
		return fmt.Errorf("message on channel %d, not defined before it: %w", m.ChannelID, ErrFormat)
	}
	rc.t.countMessage(m.ChannelID, m.LogTime)
	return nil
}

func (rc *recoverer) chunk(body []byte, at, length uint64) error {
	h, recs, err := parseExpandChunk(&rc.dec, body, &rc.buf)
	if err != nil {
		return err
	}
	// Check the whole chunk before counting any of it.
	t := rc.t
	t.stats.ChannelMessageCounts = maps.Clone(t.stats.ChannelMessageCounts)
	t.schemaAt, t.chanAt = maps.Clone(t.schemaAt), maps.Clone(t.chanAt)
	seen, msgAt := map[uint16]int{}, map[uint64]indexEntry{}
	// The time range from the messages themselves (the chunk's header
	// fields are outside its CRC).
	var first, last uint64
	for pos := 0; pos < len(recs); {
		op, rb, err := chunkRecord(recs, pos)
		if err != nil {
			return err
		}
		pos += recordHeaderLen + len(rb)
		switch op {
		case OpSchema, OpChannel:
			err = t.define(op, rb)
		case OpMessage:
			var m Message
			if err = parseMessage(rb, &m); err == nil {
				if !t.hasChannel(m.ChannelID) {
					err = fmt.Errorf("message on channel %d, not defined before it: %w", m.ChannelID, ErrFormat)
				}
				t.countMessage(m.ChannelID, m.LogTime)
				if len(msgAt) == 0 || m.LogTime < first {
					first = m.LogTime
				}
				if len(msgAt) == 0 || m.LogTime > last {
					last = m.LogTime
				}
				seen[m.ChannelID]++
				msgAt[uint64(pos-recordHeaderLen-len(rb))] = indexEntry{logTime: m.LogTime, offset: uint64(m.ChannelID)}
			}
		}
		if err != nil {
			return fmt.Errorf("%v record at chunk offset %d: %w", op, pos-recordHeaderLen-len(rb), err)
		}
	}
	t.chunks = append(t.chunks, ChunkIndex{MessageStartTime: first, MessageEndTime: last,
		ChunkStartOffset: at, ChunkLength: length, MessageIndexOffsets: map[uint16]uint64{},
		Compression: h.compression, CompressedSize: uint64(len(h.records)), UncompressedSize: h.usize})
	t.stats.ChunkCount++
	rc.t = t
	rc.open, rc.chanSeen, rc.msgAt = &rc.t.chunks[len(rc.t.chunks)-1], seen, msgAt
	return nil
}

// indexOK: a Message Index record lists exactly the open chunk's messages
// of its channel, at their log times.
func (rc *recoverer) indexOK(body []byte) bool {
	ch, entries, err := parseMessageIndex(body, nil)
	if err != nil || len(entries) != rc.chanSeen[ch] {
		return false
	}
	if _, dup := rc.open.MessageIndexOffsets[ch]; dup {
		return false
	}
	distinct := make(map[uint64]bool, len(entries))
	for _, e := range entries {
		m, ok := rc.msgAt[e.offset]
		if !ok || m.logTime != e.logTime || m.offset != uint64(ch) || distinct[e.offset] {
			return false
		}
		distinct[e.offset] = true
	}
	return true
}

// endChunk closes the open chunk's index: its message indexes count only
// when there is one for every channel with messages in it (else the map
// is emptied: "no message indexing available", as the spec allows).
func (rc *recoverer) endChunk() {
	if rc.open == nil {
		return
	}
	complete := len(rc.open.MessageIndexOffsets) == len(rc.chanSeen)
	for ch := range rc.chanSeen {
		if _, ok := rc.open.MessageIndexOffsets[ch]; !ok {
			complete = false
		}
	}
	if !complete {
		clear(rc.open.MessageIndexOffsets)
	}
	rc.open, rc.chanSeen, rc.msgAt = nil, nil, nil
}

// define parses a Schema or Channel record and adds it (a schema of ID 0
// is ignored, as the spec says).
func (t *tally) define(op Opcode, body []byte) error {
	if op == OpSchema {
		s, err := parseSchema(body)
		if err == nil && s.ID != 0 {
			_, err = t.addSchema(s)
		}
		return err
	}
	c, err := parseChannel(body)
	if err == nil {
		_, err = t.addChannel(c)
	}
	return err
}
