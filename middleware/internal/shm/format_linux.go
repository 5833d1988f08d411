package shm

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Formatting and attaching a mapping happen only in the Linux
// constructors (segment_linux.go); off Linux no ring is ever mapped.

// format writes a fresh header into mem (len >= Geometry().TotalSize) and
// marks it ready last, so a concurrent attacher never sees a half header.
func format(mem []byte, p Params, pid int, nowNs int64) *Region {
	g := p.Geometry()
	le := binary.LittleEndian
	copy(mem[offMagic:], Magic)
	le.PutUint32(mem[offVersion:], LayoutVersion)
	le.PutUint32(mem[offHdrBytes:], uint32(g.SlotsOff))
	le.PutUint64(mem[offSlotSize:], uint64(g.SlotSize))
	le.PutUint64(mem[offMaxPayload:], uint64(p.MaxPayload))
	le.PutUint32(mem[offRingLen:], uint32(p.RingLen))
	le.PutUint32(mem[offPoolLen:], uint32(g.PoolLen))
	le.PutUint32(mem[offMaxSubs:], MaxSubscribers)
	if p.Reliable {
		mem[offReliable] = 1
	}
	le.PutUint32(mem[offTopicID:], p.TopicID)
	le.PutUint64(mem[offSlotsOff:], uint64(g.SlotsOff))
	le.PutUint64(mem[offTotalSize:], uint64(g.TotalSize))
	copy(mem[offTopic:offTopic+topicMax], p.Topic)
	le.PutUint64(mem[offChecksum:], checksum(mem))
	le.PutUint32(mem[offCreatePID:], uint32(pid))
	le.PutUint64(mem[offCreatedNs:], uint64(nowNs))
	r := &Region{mem: mem, base: unsafe.Pointer(&mem[0]), P: p, G: g}
	atomic.StoreUint32(r.u32(offReady), 1)
	return r
}

func attach(mem []byte, hi HeaderInfo) *Region {
	return &Region{mem: mem, base: unsafe.Pointer(&mem[0]), P: hi.Params, G: hi.Geometry}
}
