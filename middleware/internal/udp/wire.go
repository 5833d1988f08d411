// Package udp is the UDP transport of the middleware: the wire format
// (docs/udp.md), fragmentation and bounded reassembly, the reliable NACK
// protocol (history, heartbeats, send window), batching of small messages,
// socket setup and a seeded fault-injection layer for tests.
//
// It knows nothing of the middleware's public types; middleware/udp.go maps
// them onto Sender and Receiver.
package udp

import (
	"encoding/binary"
	"hash/crc32"
)

// Wire constants. All integers are big-endian (network order). Offsets are
// documented in docs/udp.md.
const (
	// Magic is the first four bytes of every datagram: "HLRU".
	Magic uint32 = 0x484C5255
	// Version is the wire layout version carried at offset 4.
	Version uint8 = 1

	// CommonLen is the common header every datagram starts with.
	CommonLen = 20
	// DataHeaderLen is the full header of a DATA datagram (common + body
	// header); the fragment payload follows.
	DataHeaderLen = 68
	// BatchHeaderLen is the header of a BATCH datagram; records follow.
	BatchHeaderLen = 24
	// RecordHeaderLen is the header of one record inside a BATCH.
	RecordHeaderLen = 36
	// HeartbeatLen is the size of a HEARTBEAT datagram: first and last
	// seq, then echo and token (the confirmation handshake).
	HeartbeatLen = CommonLen + 32
	// AckNackHeaderLen is the fixed part of an ACKNACK datagram (ack,
	// entry count, flags, cookie, token); NACK entries (NackEntryLen each)
	// follow.
	AckNackHeaderLen = CommonLen + 28
	// NackEntryLen is one (seq, first fragment, fragment count) entry.
	NackEntryLen = 16
	// MaxNackEntries bounds the entries of one ACKNACK.
	MaxNackEntries = 64
	// MaxNameLen bounds topic and node names in ANNOUNCE.
	MaxNameLen = 64

	// MaxDatagram is the largest UDP payload over IPv4.
	MaxDatagram = 65507
	// MinFragSize is the smallest fragment payload accepted for messages of
	// more than one fragment; it bounds the fragment bitmap per message.
	MinFragSize = 256
	// MaxPayload is the largest message the wire format carries (16 MiB).
	MaxPayload = 16 << 20
)

// Kind is the datagram kind at offset 5.
type Kind uint8

// Datagram kinds.
const (
	KindData      Kind = 1 // one fragment of one message
	KindBatch     Kind = 2 // several whole small messages
	KindHeartbeat Kind = 3 // publisher → subscribers: history range
	KindAckNack   Kind = 4 // subscriber → publisher: ack + missing fragments
	KindAnnounce  Kind = 5 // endpoint liveness, for tools and publishers
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "DATA"
	case KindBatch:
		return "BATCH"
	case KindHeartbeat:
		return "HEARTBEAT"
	case KindAckNack:
		return "ACKNACK"
	case KindAnnounce:
		return "ANNOUNCE"
	}
	return "UNKNOWN"
}

// DATA flag bits (offset 50).
const (
	// FlagRetransmit marks a fragment sent again in answer to a NACK.
	FlagRetransmit uint16 = 1 << 0
	// FlagKeepLast says the publisher keeps a keep-last history and never
	// waits for acknowledgements (SenderConfig.KeepLast): its subscribers
	// acknowledge it only in answer to heartbeats, whatever they declare.
	FlagKeepLast uint16 = 1 << 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var be = binary.BigEndian

// Common is the header shared by every datagram.
type Common struct {
	Kind    Kind
	TopicID uint32 // FNV-1a of the topic name
	Epoch   uint32 // the publisher's epoch the datagram belongs to
	// Auth: the datagram carries an authentication trailer (AuthLen bytes
	// at its end, KindAuth in the kind byte), not yet verified by Parse.
	Auth bool
}

// body is the datagram without its authentication trailer: what the body
// decoders read.
func (c Common) body(b []byte) []byte {
	if c.Auth {
		return b[:len(b)-AuthLen]
	}
	return b
}

// checksum is the CRC32C of the datagram with the CRC field (16..20)
// excluded: it covers the common header and everything after it.
func checksum(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b[:16])
	return crc32.Update(c, castagnoli, b[CommonLen:])
}

// putCommon writes the common header for a datagram of total length n
// (b[:n] must already hold the body) and seals it with the CRC.
func putCommon(b []byte, n int, kind Kind, topic, epoch uint32) {
	be.PutUint32(b[0:], Magic)
	b[4] = Version
	b[5] = byte(kind)
	be.PutUint16(b[6:], uint16(n))
	be.PutUint32(b[8:], topic)
	be.PutUint32(b[12:], epoch)
	be.PutUint32(b[16:], checksum(b[:n]))
}

// Parse validates the common header of datagram b (magic, version, length,
// CRC32C, known kind) and returns it. It must succeed before any body is
// decoded; it never allocates.
func Parse(b []byte) (Common, error) {
	if len(b) < CommonLen {
		return Common{}, ErrShort
	}
	if be.Uint32(b[0:]) != Magic {
		return Common{}, ErrMagic
	}
	if b[4] != Version {
		return Common{}, ErrVersion
	}
	if int(be.Uint16(b[6:])) != len(b) {
		return Common{}, ErrLength
	}
	if be.Uint32(b[16:]) != checksum(b) {
		return Common{}, ErrCRC
	}
	k := Kind(b[5] &^ KindAuth)
	if k < KindData || k > KindAnnounce {
		return Common{}, ErrKind
	}
	auth := b[5]&KindAuth != 0
	if auth && len(b) < CommonLen+AuthLen {
		return Common{}, ErrShort
	}
	return Common{Kind: k, TopicID: be.Uint32(b[8:]), Epoch: be.Uint32(b[12:]), Auth: auth}, nil
}

// parsePlain is Parse for the public decoders, which have no key: an
// authenticated datagram is refused (ErrAuth) rather than decoded
// unverified.
func parsePlain(b []byte, want Kind) (Common, error) {
	c, err := Parse(b)
	if err != nil {
		return c, err
	}
	if c.Auth {
		return c, ErrAuth
	}
	if c.Kind != want {
		return c, ErrKind
	}
	return c, nil
}

// MsgHeader is the message header carried with every message: the
// middleware's Header minus Len (which is the payload length).
type MsgHeader struct {
	Seq       uint64 // per-epoch sequence number, first message is 1
	SendMono  int64  // ns, CLOCK_MONOTONIC of the publisher
	SendClock int64  // ns, on Clock
	Clock     int32  // clockid_t SendClock was read from
	Version   uint8  // application header version
	Flags     uint8  // application header flags
}

// Data is one fragment of one message (KindData).
type Data struct {
	TopicID, Epoch uint32
	MsgHeader
	Retransmit bool
	KeepLast   bool   // FlagKeepLast: the publisher's history mode
	MsgLen     uint32 // whole message payload length
	FragSize   uint32 // payload bytes per fragment (last may be shorter)
	FragIndex  uint32 // 0-based
	FragCount  uint32 // ceil(MsgLen/FragSize), 1 for an empty message
	// Payload is this fragment's bytes. After UnmarshalBinary it is a view
	// into the datagram; MarshalBinaryTo copies it.
	Payload []byte
}

// FragCountFor returns how many fragments a message of n bytes needs with
// fragments of fs bytes.
func FragCountFor(n, fs int) int {
	if n == 0 {
		return 1
	}
	return (n + fs - 1) / fs
}

// MarshalBinaryTo encodes d (header and Payload) into b and returns the
// datagram length. 0 allocs.
func (d *Data) MarshalBinaryTo(b []byte) (int, error) {
	n := DataHeaderLen + len(d.Payload)
	if len(b) < n {
		return 0, ErrBuffer
	}
	if n > MaxDatagram {
		return 0, ErrField
	}
	d.putHeader(b)
	copy(b[DataHeaderLen:], d.Payload)
	putCommon(b, n, KindData, d.TopicID, d.Epoch)
	return n, nil
}

// MarshalHeaderTo writes the header of d's datagram into b (at least
// DataHeaderLen bytes), its CRC covering d.Payload in place: the datagram
// is b[:DataHeaderLen] followed by d.Payload, for a vectored send that
// copies no payload. Returns the datagram's total length. 0 allocs.
func (d *Data) MarshalHeaderTo(b []byte) (int, error) {
	n := DataHeaderLen + len(d.Payload)
	if len(b) < DataHeaderLen {
		return 0, ErrBuffer
	}
	if n > MaxDatagram {
		return 0, ErrField
	}
	d.putHeader(b)
	be.PutUint32(b[0:], Magic)
	b[4] = Version
	b[5] = byte(KindData)
	be.PutUint16(b[6:], uint16(n))
	be.PutUint32(b[8:], d.TopicID)
	be.PutUint32(b[12:], d.Epoch)
	c := crc32.Update(0, castagnoli, b[:16])
	c = crc32.Update(c, castagnoli, b[CommonLen:DataHeaderLen])
	be.PutUint32(b[16:], crc32.Update(c, castagnoli, d.Payload))
	return n, nil
}

func (d *Data) putHeader(b []byte) {
	be.PutUint64(b[20:], d.Seq)
	be.PutUint64(b[28:], uint64(d.SendMono))
	be.PutUint64(b[36:], uint64(d.SendClock))
	be.PutUint32(b[44:], uint32(d.Clock))
	b[48] = d.Version
	b[49] = d.Flags
	var fl uint16
	if d.Retransmit {
		fl |= FlagRetransmit
	}
	if d.KeepLast {
		fl |= FlagKeepLast
	}
	be.PutUint16(b[50:], fl)
	be.PutUint32(b[52:], d.MsgLen)
	be.PutUint32(b[56:], d.FragSize)
	be.PutUint32(b[60:], d.FragIndex)
	be.PutUint32(b[64:], d.FragCount)
}

// UnmarshalBinary decodes a DATA datagram, validating the common header
// and every fragment field: MsgLen ≤ MaxPayload, FragCount consistent with
// MsgLen/FragSize, FragIndex < FragCount, the fragment's length exact.
// Payload aliases b. 0 allocs.
func (d *Data) UnmarshalBinary(b []byte) error {
	c, err := parsePlain(b, KindData)
	if err != nil {
		return err
	}
	return d.decode(c, b)
}

// decode decodes the body of a datagram already validated by Parse.
func (d *Data) decode(c Common, b []byte) error {
	if len(b) < DataHeaderLen {
		return ErrShort
	}
	d.TopicID, d.Epoch = c.TopicID, c.Epoch
	d.Seq = be.Uint64(b[20:])
	d.SendMono = int64(be.Uint64(b[28:]))
	d.SendClock = int64(be.Uint64(b[36:]))
	d.Clock = int32(be.Uint32(b[44:]))
	d.Version = b[48]
	d.Flags = b[49]
	fl := be.Uint16(b[50:])
	d.Retransmit = fl&FlagRetransmit != 0
	d.KeepLast = fl&FlagKeepLast != 0
	d.MsgLen = be.Uint32(b[52:])
	d.FragSize = be.Uint32(b[56:])
	d.FragIndex = be.Uint32(b[60:])
	d.FragCount = be.Uint32(b[64:])
	d.Payload = b[DataHeaderLen:]
	if d.Seq == 0 || fl&^(FlagRetransmit|FlagKeepLast) != 0 {
		return ErrField
	}
	if d.MsgLen > MaxPayload || d.FragSize == 0 || d.FragSize > MaxDatagram-DataHeaderLen {
		return ErrField
	}
	if d.FragCount != uint32(FragCountFor(int(d.MsgLen), int(d.FragSize))) || d.FragIndex >= d.FragCount {
		return ErrField
	}
	if d.FragCount > 1 && d.FragSize < MinFragSize {
		return ErrField
	}
	off := uint64(d.FragIndex) * uint64(d.FragSize)
	want := min(uint64(d.FragSize), uint64(d.MsgLen)-min(off, uint64(d.MsgLen)))
	if uint64(len(d.Payload)) != want {
		return ErrField
	}
	return nil
}

// Offset is the byte offset of this fragment in the message.
func (d *Data) Offset() int { return int(d.FragIndex) * int(d.FragSize) }

// Record is one message inside a BATCH datagram.
type Record struct {
	MsgHeader
	// Payload is the record's bytes: a view into the datagram after
	// decoding, copied by the batch writer when encoding.
	Payload []byte
}

// BATCH flag bits (offset 22).
const (
	// BatchFlagKeepLast is FlagKeepLast for the records of a BATCH.
	BatchFlagKeepLast uint16 = 1 << 0
)

// BatchWriter builds a BATCH datagram in a caller-owned buffer. The zero
// value is unusable; call Reset first. 0 allocs.
type BatchWriter struct {
	// KeepLast sets BatchFlagKeepLast on every batch (the publisher's
	// mode); Reset keeps it.
	KeepLast bool
	buf      []byte
	n        int
	count    int
}

// Reset starts a new, empty batch in buf (len(buf) is the datagram limit).
func (w *BatchWriter) Reset(buf []byte) {
	w.buf, w.n, w.count = buf, BatchHeaderLen, 0
}

// Len is the datagram length so far (header included).
func (w *BatchWriter) Len() int { return w.n }

// Count is the number of records so far.
func (w *BatchWriter) Count() int { return w.count }

// Fits reports whether a record of payload length n still fits.
func (w *BatchWriter) Fits(n int) bool {
	return w.n+RecordHeaderLen+n <= len(w.buf) && w.count < 0xFFFF
}

// Append adds one record; false when it does not fit.
func (w *BatchWriter) Append(r *Record) bool {
	if !w.Fits(len(r.Payload)) {
		return false
	}
	b := w.buf[w.n:]
	be.PutUint64(b[0:], r.Seq)
	be.PutUint64(b[8:], uint64(r.SendMono))
	be.PutUint64(b[16:], uint64(r.SendClock))
	be.PutUint32(b[24:], uint32(r.Clock))
	b[28] = r.Version
	b[29] = r.Flags
	be.PutUint16(b[30:], 0)
	be.PutUint32(b[32:], uint32(len(r.Payload)))
	copy(b[RecordHeaderLen:], r.Payload)
	w.n += RecordHeaderLen + len(r.Payload)
	w.count++
	return true
}

// Finish seals the batch and returns the datagram.
func (w *BatchWriter) Finish(topic, epoch uint32) []byte {
	be.PutUint16(w.buf[20:], uint16(w.count))
	var fl uint16
	if w.KeepLast {
		fl |= BatchFlagKeepLast
	}
	be.PutUint16(w.buf[22:], fl)
	putCommon(w.buf, w.n, KindBatch, topic, epoch)
	return w.buf[:w.n]
}

// BatchReader iterates over the records of a BATCH datagram. 0 allocs.
type BatchReader struct {
	b        []byte
	off      int
	left     int
	Count    int  // records in the batch
	KeepLast bool // BatchFlagKeepLast: the publisher's history mode
}

// UnmarshalBinary validates the whole batch (header, every record length,
// no trailing bytes, sequence numbers non-zero and increasing) and prepares
// iteration. The records alias b.
func (r *BatchReader) UnmarshalBinary(b []byte) error {
	if _, err := parsePlain(b, KindBatch); err != nil {
		return err
	}
	return r.decode(b)
}

func (r *BatchReader) decode(b []byte) error {
	if len(b) < BatchHeaderLen {
		return ErrShort
	}
	n := int(be.Uint16(b[20:]))
	fl := be.Uint16(b[22:])
	if n == 0 || fl&^BatchFlagKeepLast != 0 {
		return ErrField
	}
	off := BatchHeaderLen
	var last uint64
	for i := 0; i < n; i++ {
		if len(b)-off < RecordHeaderLen {
			return ErrShort
		}
		seq := be.Uint64(b[off:])
		l := int(be.Uint32(b[off+32:]))
		if seq <= last || be.Uint16(b[off+30:]) != 0 || l > len(b)-off-RecordHeaderLen {
			return ErrField
		}
		last = seq
		off += RecordHeaderLen + l
	}
	if off != len(b) {
		return ErrField
	}
	r.b, r.off, r.left, r.Count = b, BatchHeaderLen, n, n
	r.KeepLast = fl&BatchFlagKeepLast != 0
	return nil
}

// Next decodes the next record into rec; false when none is left.
func (r *BatchReader) Next(rec *Record) bool {
	if r.left == 0 {
		return false
	}
	b := r.b[r.off:]
	rec.Seq = be.Uint64(b[0:])
	rec.SendMono = int64(be.Uint64(b[8:]))
	rec.SendClock = int64(be.Uint64(b[16:]))
	rec.Clock = int32(be.Uint32(b[24:]))
	rec.Version = b[28]
	rec.Flags = b[29]
	l := int(be.Uint32(b[32:]))
	rec.Payload = b[RecordHeaderLen : RecordHeaderLen+l]
	r.off += RecordHeaderLen + l
	r.left--
	return true
}

// Heartbeat tells subscribers which sequence numbers the publisher still
// holds (reliable) or has sent (both modes): it reveals tail loss.
type Heartbeat struct {
	TopicID, Epoch uint32
	FirstSeq       uint64 // oldest seq still in the history; LastSeq+1 when empty
	LastSeq        uint64 // newest seq published; 0 before the first
	// Echo is the cookie of the challenging ACKNACK this heartbeat answers
	// (unicast to that subscriber); 0 in periodic heartbeats. A subscriber
	// confirms a writer when it echoes the stream's cookie.
	Echo uint64
	// Token is the publisher's token for the addressee (with Echo): the
	// subscriber returns it in its ACKNACKs, which proves its address to
	// the publisher. 0 in periodic heartbeats.
	Token uint64
}

// MarshalBinaryTo encodes h into b. 0 allocs.
func (h *Heartbeat) MarshalBinaryTo(b []byte) (int, error) {
	if len(b) < HeartbeatLen {
		return 0, ErrBuffer
	}
	be.PutUint64(b[20:], h.FirstSeq)
	be.PutUint64(b[28:], h.LastSeq)
	be.PutUint64(b[36:], h.Echo)
	be.PutUint64(b[44:], h.Token)
	putCommon(b, HeartbeatLen, KindHeartbeat, h.TopicID, h.Epoch)
	return HeartbeatLen, nil
}

// UnmarshalBinary decodes and validates a HEARTBEAT (FirstSeq ≤ LastSeq+1).
func (h *Heartbeat) UnmarshalBinary(b []byte) error {
	c, err := parsePlain(b, KindHeartbeat)
	if err != nil {
		return err
	}
	return h.decode(c, b)
}

func (h *Heartbeat) decode(c Common, b []byte) error {
	if len(b) != HeartbeatLen {
		return ErrLength
	}
	h.TopicID, h.Epoch = c.TopicID, c.Epoch
	h.FirstSeq = be.Uint64(b[20:])
	h.LastSeq = be.Uint64(b[28:])
	h.Echo = be.Uint64(b[36:])
	h.Token = be.Uint64(b[44:])
	if h.FirstSeq == 0 || h.FirstSeq > h.LastSeq+1 {
		return ErrField
	}
	return nil
}

// NackEntry asks for fragments of one message again.
type NackEntry struct {
	Seq uint64
	// FragFirst/FragCount select fragments [FragFirst, FragFirst+FragCount);
	// FragCount 0 means the whole message.
	FragFirst, FragCount uint32
}

// AckNack is a subscriber's status: everything up to Ack arrived, and the
// entries are missing. It doubles as the subscriber's liveness signal for
// the publisher's send window.
type AckNack struct {
	TopicID, Epoch uint32
	Ack            uint64 // all seq ≤ Ack delivered (0: none)
	// Challenge asks the publisher to echo Cookie in a unicast HEARTBEAT
	// (the subscriber has not confirmed this writer yet).
	Challenge bool
	// Cookie is random per subscriber stream (non-zero).
	Cookie uint64
	// Token is the publisher's token for this subscriber, as last echoed
	// (0 before): it proves the subscriber's address to the publisher.
	Token   uint64
	N       int // entries used
	Entries [MaxNackEntries]NackEntry
}

// AckNack flag bits (offset 30).
const (
	// FlagChallenge asks for a HEARTBEAT echoing the cookie.
	FlagChallenge uint16 = 1 << 0
)

// MarshalBinaryTo encodes a into b. 0 allocs.
func (a *AckNack) MarshalBinaryTo(b []byte) (int, error) {
	if a.N < 0 || a.N > MaxNackEntries {
		return 0, ErrField
	}
	n := AckNackHeaderLen + a.N*NackEntryLen
	if len(b) < n {
		return 0, ErrBuffer
	}
	be.PutUint64(b[20:], a.Ack)
	be.PutUint16(b[28:], uint16(a.N))
	var fl uint16
	if a.Challenge {
		fl |= FlagChallenge
	}
	be.PutUint16(b[30:], fl)
	be.PutUint64(b[32:], a.Cookie)
	be.PutUint64(b[40:], a.Token)
	for i := 0; i < a.N; i++ {
		e := b[AckNackHeaderLen+i*NackEntryLen:]
		be.PutUint64(e[0:], a.Entries[i].Seq)
		be.PutUint32(e[8:], a.Entries[i].FragFirst)
		be.PutUint32(e[12:], a.Entries[i].FragCount)
	}
	putCommon(b, n, KindAckNack, a.TopicID, a.Epoch)
	return n, nil
}

// UnmarshalBinary decodes and validates an ACKNACK (entry count, each
// entry's seq above Ack).
func (a *AckNack) UnmarshalBinary(b []byte) error {
	c, err := parsePlain(b, KindAckNack)
	if err != nil {
		return err
	}
	return a.decode(c, b)
}

func (a *AckNack) decode(c Common, b []byte) error {
	if len(b) < AckNackHeaderLen {
		return ErrShort
	}
	a.TopicID, a.Epoch = c.TopicID, c.Epoch
	a.Ack = be.Uint64(b[20:])
	n := int(be.Uint16(b[28:]))
	fl := be.Uint16(b[30:])
	if n > MaxNackEntries || fl&^FlagChallenge != 0 {
		return ErrField
	}
	a.Challenge = fl&FlagChallenge != 0
	a.Cookie = be.Uint64(b[32:])
	a.Token = be.Uint64(b[40:])
	if len(b) != AckNackHeaderLen+n*NackEntryLen {
		return ErrLength
	}
	a.N = n
	for i := 0; i < n; i++ {
		e := b[AckNackHeaderLen+i*NackEntryLen:]
		a.Entries[i] = NackEntry{Seq: be.Uint64(e[0:]), FragFirst: be.Uint32(e[8:]), FragCount: be.Uint32(e[12:])}
		if a.Entries[i].Seq <= a.Ack {
			return ErrField
		}
	}
	return nil
}

// Announce roles.
const (
	RolePublisher  uint8 = 1
	RoleSubscriber uint8 = 2
)

const (
	// AnnounceHeaderLen is the fixed part of an ANNOUNCE: the common header,
	// entry count u16, node name length u8, reserved u8; the node name and
	// the entries follow.
	AnnounceHeaderLen = CommonLen + 4
	// AnnounceEntryLen is the fixed part of one ANNOUNCE entry (role u8,
	// topic length u8, port u16, IPv4 address, topic id u32, epoch u32);
	// the topic name follows.
	AnnounceEntryLen = 16
	// MaxAnnounceEntries bounds the entries of one ANNOUNCE datagram.
	MaxAnnounceEntries = 128
	// AnnounceMTU is the default size limit of an ANNOUNCE datagram (an
	// Ethernet MTU minus IP and UDP headers); a node with more endpoints
	// than fit sends several.
	AnnounceMTU = 1472
)

// AnnounceEntry is one endpoint listed in a node's ANNOUNCE.
type AnnounceEntry struct {
	Role uint8
	// Port is a subscriber's data port or a publisher's ACKNACK port.
	Port uint16
	// Addr is the endpoint's bound IPv4 address; zero means "the source
	// address of the ANNOUNCE" (the endpoint is bound to 0.0.0.0).
	Addr [4]byte
	// TopicID must be the FNV-1a hash of Topic (checked on decode).
	TopicID uint32
	// Epoch is a publisher's epoch; 0 for subscribers.
	Epoch    uint32
	Topic    [MaxNameLen]byte
	TopicLen uint8
}

// SetTopic copies the topic name (truncated to MaxNameLen) and sets
// TopicID to its hash.
func (e *AnnounceEntry) SetTopic(topic string) {
	e.TopicLen = uint8(copy(e.Topic[:], topic))
	e.TopicID = TopicID(string(e.Topic[:e.TopicLen]))
}

// TopicName returns the topic (allocates; tools only).
func (e *AnnounceEntry) TopicName() string { return string(e.Topic[:e.TopicLen]) }

// WireLen is the entry's encoded size.
func (e *AnnounceEntry) WireLen() int { return AnnounceEntryLen + int(e.TopicLen) }

// Announce is one ANNOUNCE datagram: the periodic liveness message of a
// node, listing its UDP endpoints announcing on one group. The common
// header carries topic id 0 and the node's announce epoch (random per
// announcer, so a tool sees a node restart).
type Announce struct {
	NodeEpoch uint32
	Node      [MaxNameLen]byte
	NodeLen   uint8
	N         int // entries used
	Entries   [MaxAnnounceEntries]AnnounceEntry
}

// SetNode copies the node name (truncated to MaxNameLen).
func (a *Announce) SetNode(node string) { a.NodeLen = uint8(copy(a.Node[:], node)) }

// NodeName returns the announcing node's name (allocates; tools only).
func (a *Announce) NodeName() string { return string(a.Node[:a.NodeLen]) }

// WireLen is the encoded size of a.
func (a *Announce) WireLen() int {
	n := AnnounceHeaderLen + int(a.NodeLen)
	for i := 0; i < a.N && i < MaxAnnounceEntries; i++ {
		n += a.Entries[i].WireLen()
	}
	return n
}

// MarshalBinaryTo encodes a into b. 0 allocs.
func (a *Announce) MarshalBinaryTo(b []byte) (int, error) {
	if a.N < 1 || a.N > MaxAnnounceEntries || a.NodeLen > MaxNameLen {
		return 0, ErrField
	}
	n := a.WireLen()
	if n > MaxDatagram {
		return 0, ErrField
	}
	if len(b) < n {
		return 0, ErrBuffer
	}
	be.PutUint16(b[20:], uint16(a.N))
	b[22] = a.NodeLen
	b[23] = 0
	off := AnnounceHeaderLen + copy(b[AnnounceHeaderLen:], a.Node[:a.NodeLen])
	for i := 0; i < a.N; i++ {
		e := &a.Entries[i]
		if e.TopicLen == 0 || e.TopicLen > MaxNameLen || (e.Role != RolePublisher && e.Role != RoleSubscriber) {
			return 0, ErrField
		}
		b[off] = e.Role
		b[off+1] = e.TopicLen
		be.PutUint16(b[off+2:], e.Port)
		copy(b[off+4:off+8], e.Addr[:])
		be.PutUint32(b[off+8:], e.TopicID)
		be.PutUint32(b[off+12:], e.Epoch)
		off += AnnounceEntryLen + copy(b[off+AnnounceEntryLen:], e.Topic[:e.TopicLen])
	}
	putCommon(b, n, KindAnnounce, 0, a.NodeEpoch)
	return n, nil
}

// UnmarshalBinary decodes and validates an ANNOUNCE: common header, entry
// count 1..MaxAnnounceEntries, name lengths, roles, topic id = hash of the
// topic, non-zero ports, entries covering the datagram exactly. 0 allocs.
func (a *Announce) UnmarshalBinary(b []byte) error {
	c, err := parsePlain(b, KindAnnounce)
	if err != nil {
		return err
	}
	return a.decode(c, b)
}

// decode decodes the body of an ANNOUNCE already validated by Parse (and
// authenticated, with the trailer cut off, in a keyed domain).
func (a *Announce) decode(c Common, b []byte) error {
	if len(b) < AnnounceHeaderLen {
		return ErrShort
	}
	cnt, nl := int(be.Uint16(b[20:])), b[22]
	if c.TopicID != 0 || cnt < 1 || cnt > MaxAnnounceEntries || nl > MaxNameLen || b[23] != 0 || len(b) < AnnounceHeaderLen+int(nl) {
		return ErrField
	}
	off := AnnounceHeaderLen + int(nl)
	// Walk every entry before filling a: a bad datagram leaves a unchanged.
	for i, o := 0, off; i < cnt; i++ {
		if len(b)-o < AnnounceEntryLen {
			return ErrLength
		}
		tl := int(b[o+1])
		if r := b[o]; (r != RolePublisher && r != RoleSubscriber) || tl == 0 || tl > MaxNameLen ||
			be.Uint16(b[o+2:]) == 0 || len(b)-o-AnnounceEntryLen < tl ||
			TopicIDBytes(b[o+AnnounceEntryLen:o+AnnounceEntryLen+tl]) != be.Uint32(b[o+8:]) {
			return ErrField
		}
		o += AnnounceEntryLen + tl
		if i == cnt-1 && o != len(b) {
			return ErrLength
		}
	}
	a.NodeEpoch, a.NodeLen, a.N = c.Epoch, nl, cnt
	clear(a.Node[:])
	copy(a.Node[:], b[AnnounceHeaderLen:off])
	for i := 0; i < cnt; i++ {
		e := &a.Entries[i]
		tl := b[off+1]
		*e = AnnounceEntry{Role: b[off], TopicLen: tl, Port: be.Uint16(b[off+2:]),
			TopicID: be.Uint32(b[off+8:]), Epoch: be.Uint32(b[off+12:])}
		copy(e.Addr[:], b[off+4:off+8])
		copy(e.Topic[:], b[off+AnnounceEntryLen:off+AnnounceEntryLen+int(tl)])
		off += AnnounceEntryLen + int(tl)
	}
	return nil
}

// TopicIDBytes is TopicID of a name held in bytes (no allocation).
func TopicIDBytes(name []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range name {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// TopicID returns the 32-bit FNV-1a hash of a topic name, the TopicID on
// the wire.
func TopicID(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return h
}
