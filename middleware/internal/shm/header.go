package shm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// HeaderInfo is what a segment header says about itself.
type HeaderInfo struct {
	Params
	Geometry
	CreatePID int
	CreatedNs int64
	Ready     bool
}

// ParseHeader validates the header in mem (at least the table must be
// mapped) of a file of fileSize bytes. name is used in errors only. Every
// error wraps ErrBadSegment and says what is wrong.
func ParseHeader(mem []byte, fileSize int64, name string) (HeaderInfo, error) {
	var hi HeaderInfo
	bad := func(format string, a ...any) (HeaderInfo, error) {
		return hi, fmt.Errorf("%s: %w: %s", name, ErrBadSegment, fmt.Sprintf(format, a...))
	}
	minHdr := offTable + MaxSubscribers*subEntrySize
	if fileSize < int64(minHdr) || len(mem) < minHdr {
		return bad("truncated: %d bytes, a header needs at least %d", fileSize, minHdr)
	}
	if string(mem[offMagic:offMagic+8]) != Magic {
		return bad("wrong magic %q, want %q (not a hilrig segment or overwritten)", mem[offMagic:offMagic+8], Magic)
	}
	le := binary.LittleEndian
	if v := le.Uint32(mem[offVersion:]); v != LayoutVersion {
		return bad("layout version %d, this build reads version %d (rebuild the other side or remove the segment)", v, LayoutVersion)
	}
	if got, want := le.Uint64(mem[offChecksum:]), checksum(mem); got != want {
		return bad("header checksum %#x, computed %#x (header corrupt)", got, want)
	}
	hi.Ready = atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[offReady]))) == 1
	hi.MaxPayload = int(le.Uint64(mem[offMaxPayload:]))
	hi.RingLen = int(le.Uint32(mem[offRingLen:]))
	hi.Reliable = mem[offReliable] == 1
	hi.TopicID = le.Uint32(mem[offTopicID:])
	hi.Topic = string(bytes.TrimRight(mem[offTopic:offTopic+topicMax], "\x00"))
	hi.CreatePID = int(le.Uint32(mem[offCreatePID:]))
	hi.CreatedNs = int64(le.Uint64(mem[offCreatedNs:]))
	if hi.RingLen < 1 || hi.RingLen+MaxSubscribers+1 > MaxPool || hi.MaxPayload < 1 || hi.MaxPayload > 1<<40 {
		return bad("implausible geometry: ring %d entries, max payload %d bytes", hi.RingLen, hi.MaxPayload)
	}
	if m := le.Uint32(mem[offMaxSubs:]); m != MaxSubscribers {
		return bad("subscriber table of %d entries, this build uses %d", m, MaxSubscribers)
	}
	hi.Geometry = hi.Params.Geometry()
	if got := int(le.Uint64(mem[offSlotSize:])); got != hi.SlotSize {
		return bad("slot size %d, expected %d for max payload %d", got, hi.SlotSize, hi.MaxPayload)
	}
	if got := int(le.Uint32(mem[offPoolLen:])); got != hi.PoolLen {
		return bad("pool of %d slots, expected %d", got, hi.PoolLen)
	}
	if got := int(le.Uint64(mem[offSlotsOff:])); got != hi.SlotsOff {
		return bad("slots at offset %d, expected %d", got, hi.SlotsOff)
	}
	if got := int64(le.Uint64(mem[offTotalSize:])); got != int64(hi.TotalSize) {
		return bad("header says %d bytes, expected %d", got, hi.TotalSize)
	}
	if fileSize < int64(hi.TotalSize) {
		return bad("truncated: file has %d bytes, header needs %d (the file was shortened after it was created; remove it with `hilrig shm clean` once nobody uses it)", fileSize, hi.TotalSize)
	}
	return hi, nil
}

// Compare reports how have (from a segment) differs from want, as an error
// wrapping ErrContract that names the field, or nil.
func Compare(name string, have, want Params) error {
	diff := func(field string, h, w any) error {
		return fmt.Errorf("%s: %w: segment has %s %v, contract says %v", name, ErrContract, field, h, w)
	}
	switch {
	case have.Topic != want.Topic:
		return diff("topic", have.Topic, want.Topic)
	case have.MaxPayload != want.MaxPayload:
		return diff("max payload", have.MaxPayload, want.MaxPayload)
	case have.RingLen != want.RingLen:
		return diff("slots", have.RingLen, want.RingLen)
	case have.Reliable != want.Reliable:
		return diff("reliable", have.Reliable, want.Reliable)
	case have.TopicID != want.TopicID:
		return diff("topic id", have.TopicID, want.TopicID)
	}
	return nil
}
