// Package mcap reads and writes MCAP files (https://mcap.dev/spec), the
// container format of ros2 bag (its default storage since Iron) and
// Foxglove, written here from the public specification: the foxglove Go
// module is not served to this project.
//
// The Writer streams: records go to the caller's io.Writer as they are
// complete, the open chunk is bounded (Options.ChunkSize), and a file cut
// short by a killed process is readable up to its last complete chunk
// (Recover rewrites its summary). The readers (NewStreamReader for any
// io.Reader, NewIndexedReader for an io.ReaderAt with a summary) check
// every CRC the file carries and every length before use, against caps
// (Limits), and name the offset and record of what they refuse.
//
// Timestamps are uint64 nanoseconds since an epoch the writer chose (the
// spec's "user-understood epoch"); hilrig writes CLOCK_REALTIME ns.
// No type here is safe for concurrent use.
package mcap

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Magic opens and closes every MCAP file (major version '0').
var Magic = [8]byte{0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'}

// Opcode is a record's type byte.
type Opcode uint8

// The record opcodes of the specification.
const (
	OpHeader          Opcode = 0x01
	OpFooter          Opcode = 0x02
	OpSchema          Opcode = 0x03
	OpChannel         Opcode = 0x04
	OpMessage         Opcode = 0x05
	OpChunk           Opcode = 0x06
	OpMessageIndex    Opcode = 0x07
	OpChunkIndex      Opcode = 0x08
	OpAttachment      Opcode = 0x09
	OpAttachmentIndex Opcode = 0x0A
	OpStatistics      Opcode = 0x0B
	OpMetadata        Opcode = 0x0C
	OpMetadataIndex   Opcode = 0x0D
	OpSummaryOffset   Opcode = 0x0E
	OpDataEnd         Opcode = 0x0F
)

var opNames = [...]string{"", "Header", "Footer", "Schema", "Channel", "Message", "Chunk", "MessageIndex",
	"ChunkIndex", "Attachment", "AttachmentIndex", "Statistics", "Metadata", "MetadataIndex", "SummaryOffset", "DataEnd"}

// String is the record's name in the specification ("Chunk"), or its
// number for opcodes it does not name.
func (o Opcode) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "op 0x" + strconv.FormatUint(uint64(o), 16)
}

// Compression is a chunk's compression, as the file names it.
type Compression string

// The compressions the Writer writes and the readers read.
const (
	CompressNone Compression = ""
	CompressZstd Compression = "zstd"
	CompressLZ4  Compression = "lz4"
)

// String is "none", "zstd" or "lz4" (what the file says, for others).
func (c Compression) String() string {
	if c == CompressNone {
		return "none"
	}
	return string(c)
}

// MarshalText is the file's name of the compression ("" for none).
func (c Compression) MarshalText() ([]byte, error) { return []byte(c), nil }

// UnmarshalText accepts "", "none", "zstd" and "lz4".
func (c *Compression) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "", "none":
		*c = CompressNone
	case "zstd", "lz4":
		*c = Compression(s)
	default:
		return fmt.Errorf("mcap: compression %q: want none, zstd or lz4", s)
	}
	return nil
}

// Header is the file's first record.
type Header struct {
	Profile string // "ros2" for ROS 2 recordings
	Library string // the writer's name and version
}

// Schema describes the messages of channels that refer to its ID (never 0).
type Schema struct {
	ID       uint16
	Name     string // "sensor_msgs/msg/Imu"
	Encoding string // "ros2msg", "jsonschema", …; "" for none
	Data     []byte
}

// Channel is a stream of messages on a topic.
type Channel struct {
	ID              uint16
	SchemaID        uint16 // 0: no schema
	Topic           string
	MessageEncoding string // "cdr", "json", …
	Metadata        map[string]string
}

// Message is one timestamped message. A reader's Message.Data aliases the
// reader's buffer: it is valid until the reader's next call.
type Message struct {
	ChannelID   uint16
	Sequence    uint32
	LogTime     uint64 // ns, when recorded
	PublishTime uint64 // ns, when published (LogTime when unknown)
	Data        []byte
}

// Attachment is an auxiliary file carried in the data section (a
// configuration, a calibration, a log), outside any chunk.
type Attachment struct {
	LogTime    uint64 // ns
	CreateTime uint64 // ns; 0 when unknown
	Name       string
	MediaType  string // "text/plain", "application/json", …
	Data       []byte
}

// ChunkIndex locates a chunk and its message indexes (summary section).
type ChunkIndex struct {
	MessageStartTime    uint64
	MessageEndTime      uint64
	ChunkStartOffset    uint64 // file offset of the Chunk record's opcode
	ChunkLength         uint64 // whole record, opcode and length included
	MessageIndexOffsets map[uint16]uint64
	MessageIndexLength  uint64
	Compression         Compression
	CompressedSize      uint64
	UncompressedSize    uint64
}

// Statistics counts a file's records (summary section).
type Statistics struct {
	MessageCount         uint64
	SchemaCount          uint16
	ChannelCount         uint32
	AttachmentCount      uint32
	MetadataCount        uint32
	ChunkCount           uint32
	MessageStartTime     uint64
	MessageEndTime       uint64
	ChannelMessageCounts map[uint16]uint64
}

// SummaryOffset locates one opcode's group of summary records.
type SummaryOffset struct {
	GroupOpcode Opcode
	GroupStart  uint64
	GroupLength uint64
}

// Footer is the file's last record.
type Footer struct {
	SummaryStart       uint64
	SummaryOffsetStart uint64
	SummaryCRC         uint32
}

// Sizes of the fixed parts.
const (
	recordHeaderLen = 1 + 8
	footerLen       = recordHeaderLen + 8 + 8 + 4 // a whole Footer record
	dataEndLen      = recordHeaderLen + 4
	messageFixedLen = 2 + 4 + 8 + 8
)

// ---- encoding: append helpers into caller-owned buffers ----

func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendString(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

// appendU64s, appendU32s and appendStrings append runs of same-typed
// fields in order: a record's field table, one call per run. The variadic
// slices do not escape, so the hot paths stay 0 allocs/op.
func appendU64s(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = appendU64(b, v)
	}
	return b
}

func appendU32s(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = appendU32(b, v)
	}
	return b
}

func appendStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// beginRecord appends the opcode and a length placeholder; endRecord
// fills the length in. Records are built in place, without a copy.
func beginRecord(b []byte, op Opcode) ([]byte, int) {
	b = append(b, byte(op))
	at := len(b)
	return appendU64(b, 0), at
}

func endRecord(b []byte, at int) []byte {
	binary.LittleEndian.PutUint64(b[at:], uint64(len(b)-at-8))
	return b
}

// appendMap appends m as a uint32-byte-length-prefixed run of entries in
// key order, each written by entry.
func appendMap[K cmp.Ordered, V any](b []byte, m map[K]V, entry func([]byte, K, V) []byte) []byte {
	at := len(b)
	b = appendU32(b, 0)
	for _, k := range sortedKeys(m) {
		b = entry(b, k, m[k])
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func appendStringMap(b []byte, m map[string]string) []byte {
	return appendMap(b, m, func(b []byte, k, v string) []byte { return appendStrings(b, k, v) })
}

func appendU16U64Map(b []byte, m map[uint16]uint64) []byte {
	return appendMap(b, m, func(b []byte, k uint16, v uint64) []byte { return appendU64(appendU16(b, k), v) })
}

func appendHeader(b []byte, h Header) []byte {
	b, at := beginRecord(b, OpHeader)
	b = appendStrings(b, h.Profile, h.Library)
	return endRecord(b, at)
}

func appendSchema(b []byte, s *Schema) []byte {
	b, at := beginRecord(b, OpSchema)
	b = appendU16(b, s.ID)
	b = appendStrings(b, s.Name, s.Encoding)
	b = appendU32(b, uint32(len(s.Data)))
	b = append(b, s.Data...)
	return endRecord(b, at)
}

func appendChannel(b []byte, c *Channel) []byte {
	b, at := beginRecord(b, OpChannel)
	b = appendU16(appendU16(b, c.ID), c.SchemaID)
	b = appendStrings(b, c.Topic, c.MessageEncoding)
	b = appendStringMap(b, c.Metadata)
	return endRecord(b, at)
}

// appendMessageHeader appends a Message record up to its data; the data
// follows it directly.
func appendMessageHeader(b []byte, m *Message) []byte {
	b = append(b, byte(OpMessage))
	b = appendU64(b, uint64(messageFixedLen+len(m.Data)))
	b = appendU16(b, m.ChannelID)
	b = appendU32(b, m.Sequence)
	b = appendU64(b, m.LogTime)
	return appendU64(b, m.PublishTime)
}

func appendChunkIndex(b []byte, ci *ChunkIndex) []byte {
	b, at := beginRecord(b, OpChunkIndex)
	b = appendU64s(b, ci.MessageStartTime, ci.MessageEndTime, ci.ChunkStartOffset, ci.ChunkLength)
	b = appendU16U64Map(b, ci.MessageIndexOffsets)
	b = appendU64(b, ci.MessageIndexLength)
	b = appendString(b, string(ci.Compression))
	b = appendU64s(b, ci.CompressedSize, ci.UncompressedSize)
	return endRecord(b, at)
}

func appendAttachment(b []byte, a *Attachment) []byte {
	b, at := beginRecord(b, OpAttachment)
	body := len(b)
	b = appendU64s(b, a.LogTime, a.CreateTime)
	b = appendStrings(b, a.Name, a.MediaType)
	b = appendU64(b, uint64(len(a.Data)))
	b = append(b, a.Data...)
	b = appendU32(b, crcOf(b[body:]))
	return endRecord(b, at)
}

func appendMetadata(b []byte, name string, kv map[string]string) []byte {
	b, at := beginRecord(b, OpMetadata)
	b = appendString(b, name)
	b = appendStringMap(b, kv)
	return endRecord(b, at)
}

func appendAttachmentIndex(b []byte, a *attachmentIndex) []byte {
	b, at := beginRecord(b, OpAttachmentIndex)
	b = appendU64s(b, a.offset, a.length, a.logTime, a.createTime, a.dataSize)
	b = appendStrings(b, a.name, a.mediaType)
	return endRecord(b, at)
}

func appendMetadataIndex(b []byte, m *metadataIndex) []byte {
	b, at := beginRecord(b, OpMetadataIndex)
	b = appendU64s(b, m.offset, m.length)
	b = appendString(b, m.name)
	return endRecord(b, at)
}

func appendStatistics(b []byte, s *Statistics) []byte {
	b, at := beginRecord(b, OpStatistics)
	b = appendU64(b, s.MessageCount)
	b = appendU16(b, s.SchemaCount)
	b = appendU32s(b, s.ChannelCount, s.AttachmentCount, s.MetadataCount, s.ChunkCount)
	b = appendU64s(b, s.MessageStartTime, s.MessageEndTime)
	b = appendU16U64Map(b, s.ChannelMessageCounts)
	return endRecord(b, at)
}

func appendSummaryOffset(b []byte, so SummaryOffset) []byte {
	b, at := beginRecord(b, OpSummaryOffset)
	b = append(b, byte(so.GroupOpcode))
	b = appendU64s(b, so.GroupStart, so.GroupLength)
	return endRecord(b, at)
}

func appendDataEnd(b []byte, crc uint32) []byte {
	b, at := beginRecord(b, OpDataEnd)
	b = appendU32(b, crc)
	return endRecord(b, at)
}

// ---- decoding: a bounds-checked cursor over one record's body ----

// ErrFormat marks a file that breaks the specification (a bad length, CRC,
// magic or field); errors name the offset and the record.
var ErrFormat = errors.New("mcap: malformed file")

// ErrTruncated marks a file that ends inside a record or before its
// footer: a recording cut short. What came before it was read.
var ErrTruncated = errors.New("mcap: file cut short")

// cursor reads little-endian fields from a record body. The first short
// read sticks in err, naming the field; later reads return zero values.
type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) need(n int, field string) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b)-c.off {
		c.err = fmt.Errorf("field %s: needs %d bytes, %d left: %w", field, n, len(c.b)-c.off, ErrFormat)
		return nil
	}
	s := c.b[c.off : c.off+n]
	c.off += n
	return s
}

func (c *cursor) u8(field string) uint8 {
	if s := c.need(1, field); s != nil {
		return s[0]
	}
	return 0
}

func (c *cursor) u16(field string) uint16 {
	if s := c.need(2, field); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (c *cursor) u32(field string) uint32 {
	if s := c.need(4, field); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (c *cursor) u64(field string) uint64 {
	if s := c.need(8, field); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

// bytes32 is a uint32-length-prefixed field, aliasing the body.
func (c *cursor) bytes32(field string) []byte {
	n := c.u32(field)
	if c.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(c.b)-c.off) {
		c.err = fmt.Errorf("field %s: length %d, %d bytes left: %w", field, n, len(c.b)-c.off, ErrFormat)
		return nil
	}
	return c.need(int(n), field)
}

func (c *cursor) str(field string) string { return string(c.bytes32(field)) }

func (c *cursor) stringMap(field string) map[string]string {
	body := c.bytes32(field)
	if c.err != nil {
		return nil
	}
	m := map[string]string{}
	in := cursor{b: body}
	for in.off < len(body) && in.err == nil {
		k := in.str(field + " key")
		m[k] = in.str(field + " value")
	}
	if in.err != nil {
		c.err = in.err
	}
	return m
}

func (c *cursor) u16u64Map(field string) map[uint16]uint64 {
	body := c.bytes32(field)
	if c.err != nil {
		return nil
	}
	if len(body)%10 != 0 {
		c.err = fmt.Errorf("field %s: %d bytes is no whole number of uint16→uint64 entries: %w", field, len(body), ErrFormat)
		return nil
	}
	m := make(map[uint16]uint64, len(body)/10)
	for i := 0; i < len(body); i += 10 {
		m[binary.LittleEndian.Uint16(body[i:])] = binary.LittleEndian.Uint64(body[i+2:])
	}
	return m
}

func parseHeader(b []byte) (Header, error) {
	c := cursor{b: b}
	h := Header{Profile: c.str("profile"), Library: c.str("library")}
	return h, c.err
}

func parseSchema(b []byte) (Schema, error) {
	c := cursor{b: b}
	s := Schema{ID: c.u16("id"), Name: c.str("name"), Encoding: c.str("encoding")}
	s.Data = append([]byte(nil), c.bytes32("data")...)
	return s, c.err
}

func parseChannel(b []byte) (Channel, error) {
	c := cursor{b: b}
	ch := Channel{ID: c.u16("id"), SchemaID: c.u16("schema_id"), Topic: c.str("topic"),
		MessageEncoding: c.str("message_encoding"), Metadata: c.stringMap("metadata")}
	return ch, c.err
}

// parseMessage fills m in place; m.Data aliases b.
func parseMessage(b []byte, m *Message) error {
	if len(b) < messageFixedLen {
		return fmt.Errorf("%d bytes, want at least %d: %w", len(b), messageFixedLen, ErrFormat)
	}
	m.ChannelID = binary.LittleEndian.Uint16(b)
	m.Sequence = binary.LittleEndian.Uint32(b[2:])
	m.LogTime = binary.LittleEndian.Uint64(b[6:])
	m.PublishTime = binary.LittleEndian.Uint64(b[14:])
	m.Data = b[messageFixedLen:]
	return nil
}

// chunkHead is a Chunk record's fields; records aliases the body.
type chunkHead struct {
	start, end, usize uint64
	crc               uint32
	compression       Compression
	records           []byte
}

func parseChunk(b []byte) (chunkHead, error) {
	c := cursor{b: b}
	h := chunkHead{start: c.u64("message_start_time"), end: c.u64("message_end_time"),
		usize: c.u64("uncompressed_size"), crc: c.u32("uncompressed_crc"), compression: Compression(c.str("compression"))}
	n := c.u64("records length")
	if c.err == nil && n > uint64(len(b)-c.off) {
		return h, fmt.Errorf("field records: length %d, %d bytes left: %w", n, len(b)-c.off, ErrFormat)
	}
	h.records = c.need(int(n), "records")
	return h, c.err
}

// parseMessageIndex appends the (log_time, offset) entries to dst.
func parseMessageIndex(b []byte, dst []indexEntry) (uint16, []indexEntry, error) {
	c := cursor{b: b}
	ch := c.u16("channel_id")
	body := c.bytes32("records")
	if c.err != nil {
		return 0, dst, c.err
	}
	if len(body)%16 != 0 {
		return 0, dst, fmt.Errorf("field records: %d bytes is no whole number of (time, offset) entries: %w", len(body), ErrFormat)
	}
	for i := 0; i < len(body); i += 16 {
		dst = append(dst, indexEntry{logTime: binary.LittleEndian.Uint64(body[i:]), offset: binary.LittleEndian.Uint64(body[i+8:])})
	}
	return ch, dst, nil
}

func parseChunkIndex(b []byte) (ChunkIndex, error) {
	c := cursor{b: b}
	ci := ChunkIndex{MessageStartTime: c.u64("message_start_time"), MessageEndTime: c.u64("message_end_time"),
		ChunkStartOffset: c.u64("chunk_start_offset"), ChunkLength: c.u64("chunk_length"),
		MessageIndexOffsets: c.u16u64Map("message_index_offsets"), MessageIndexLength: c.u64("message_index_length"),
		Compression: Compression(c.str("compression")), CompressedSize: c.u64("compressed_size"),
		UncompressedSize: c.u64("uncompressed_size")}
	return ci, c.err
}

func parseStatistics(b []byte) (Statistics, error) {
	c := cursor{b: b}
	s := Statistics{MessageCount: c.u64("message_count"), SchemaCount: c.u16("schema_count"),
		ChannelCount: c.u32("channel_count"), AttachmentCount: c.u32("attachment_count"),
		MetadataCount: c.u32("metadata_count"), ChunkCount: c.u32("chunk_count"),
		MessageStartTime: c.u64("message_start_time"), MessageEndTime: c.u64("message_end_time"),
		ChannelMessageCounts: c.u16u64Map("channel_message_counts")}
	return s, c.err
}

func parseSummaryOffset(b []byte) (SummaryOffset, error) {
	c := cursor{b: b}
	so := SummaryOffset{GroupOpcode: Opcode(c.u8("group_opcode")), GroupStart: c.u64("group_start"), GroupLength: c.u64("group_length")}
	return so, c.err
}

func parseFooter(b []byte) (Footer, error) {
	c := cursor{b: b}
	f := Footer{SummaryStart: c.u64("summary_start"), SummaryOffsetStart: c.u64("summary_offset_start"), SummaryCRC: c.u32("summary_crc")}
	return f, c.err
}

func parseDataEnd(b []byte) (uint32, error) {
	c := cursor{b: b}
	v := c.u32("data_section_crc")
	return v, c.err
}

// checkAttachment checks an Attachment record's own CRC (over every field
// before it) and returns its index entry (offset and length left 0).
func checkAttachment(b []byte) (attachmentIndex, error) {
	c := cursor{b: b}
	a := attachmentIndex{logTime: c.u64("log_time"), createTime: c.u64("create_time"), name: c.str("name"), mediaType: c.str("media_type")}
	name := a.name
	n := c.u64("data length")
	a.dataSize = n
	if c.err == nil && n > uint64(len(b)-c.off) {
		return a, fmt.Errorf("attachment %q: data length %d, %d bytes left: %w", name, n, len(b)-c.off, ErrFormat)
	}
	c.need(int(n), "data")
	end := c.off
	want := c.u32("crc")
	if c.err != nil {
		return a, c.err
	}
	if got := crcOf(b[:end]); want != 0 && got != want {
		return a, fmt.Errorf("attachment %q: CRC %08x, record says %08x: %w", name, got, want, ErrFormat)
	}
	return a, nil
}

type indexEntry struct {
	logTime, offset uint64
}

func fitsU32(n int) bool { return uint64(n) <= math.MaxUint32 }
