// Package shm is the shared-memory ring of the middleware: the segment
// layout (versioned header, publisher block, subscriber table, ring of
// entries, pool of slots), the single-writer publish protocol, the
// hold-and-verify read protocol with per-slot seqlocks, futex wake-ups,
// reliable back-pressure and crash recovery. It works on any byte mapping:
// a /dev/shm file (Open) or anonymous memory (NewAnon) for the
// intra-process path. docs/middleware.md describes the layout and the
// memory ordering of every atomic; the offsets here are the reference.
package shm

import (
	"hash/fnv"
	"unsafe"
)

// Layout constants. Changing any offset requires bumping LayoutVersion.
const (
	Magic         = "HILRIGSM"
	LayoutVersion = 1
	FrameVersion  = 1

	// MaxSubscribers is the size of the subscriber table. Every table
	// entry may hold one slot while its callback runs, so the pool has
	// ring + MaxSubscribers + 1 slots and the publisher never waits for a
	// free slot.
	MaxSubscribers = 16

	SlotHeaderSize = 64
	subEntrySize   = 128

	// static header (written once by the creator, covered by checksum)
	offMagic      = 0
	offVersion    = 8
	offHdrBytes   = 12
	offSlotSize   = 16
	offMaxPayload = 24
	offRingLen    = 32
	offPoolLen    = 36
	offMaxSubs    = 40
	offReliable   = 44
	offTopicID    = 48
	offSlotsOff   = 56
	offTotalSize  = 64
	offChecksum   = 72 // FNV-1a 64 over bytes [0,72) and the topic
	offTopic      = 80 // [64]byte, NUL padded
	topicMax      = 64
	offCreatePID  = 144
	offCreatedNs  = 152
	offReady      = 192 // uint32: 0 initialising, 1 ready

	// publisher block
	offPubOwner  = 256 // uint64: pid<<32 | 1 while a publisher owns the ring
	offPubStart  = 264 // uint64: owner's start time (clock ticks after boot)
	offEpoch     = 272 // uint32
	offEpochBase = 280 // uint64: position before the epoch's first message
	offHead      = 320 // uint64: last committed position; low 32 bits are the futex word
	offWaiters   = 328 // uint32: subscribers sleeping on head
	offHiWater   = 332 // uint32: 1 + highest table index ever claimed
	offAckWord   = 384 // uint32: futex word the Reliable publisher sleeps on
	offPubWait   = 388 // uint32: 1 while the publisher sleeps on ackWord
	offPublished = 448 // uint64 publisher stats
	offBlockedNs = 456
	offTimeouts  = 464
	offDropped   = 472

	offTable = 512

	// subscriber table entry
	subState     = 0  // uint64: pid<<32 | state
	subStart     = 8  // uint64: process start time
	subHold      = 16 // uint64: 1 + slot index the callback is reading, 0 none
	subAcked     = 24 // uint64: last position consumed
	subDelivered = 32
	subLost      = 40
	subOverruns  = 48
	subTorn      = 56
	subEpochs    = 64
	subWait      = 72 // uint32 wait strategy (informational)
	subName      = 80 // [48]byte
	subNameMax   = 48

	// slot header
	slVer      = 0 // uint64 seqlock: 2p-1 while writing position p, 2p committed
	slPos      = 8
	slSeq      = 16
	slSendMono = 24
	slSendClk  = 32
	slEpoch    = 40
	slLen      = 44
	slTopicID  = 48
	slClock    = 52
	slVersion  = 56
	slFlags    = 57

	// entry states (low 32 bits of subState)
	stFree    = 0
	stJoining = 1
	stActive  = 2

	posShift = 16
	slotMask = 1<<posShift - 1
	// MaxPool is the largest pool an entry can index.
	MaxPool = slotMask
)

// Params are the static properties of a ring; both ends must agree.
type Params struct {
	Topic      string
	TopicID    uint32
	MaxPayload int
	RingLen    int // entries in the ring (keep-last window)
	Reliable   bool
}

// Geometry is the computed layout of a ring.
type Geometry struct {
	SlotSize  int // bytes per slot, header included, 64-aligned
	PoolLen   int
	TableOff  int
	RingOff   int
	SlotsOff  int
	TotalSize int
	// WorkSlots is the steady-state working set of the pool: the ring,
	// the slot being written (or pre-picked for the next publish) and one
	// slot a subscriber may hold after it left the ring. The publisher pops
	// free slots LIFO, lowest index first, so these are slots
	// [0, WorkSlots); further slots are touched only while subscribers
	// hold several at once. See reserve.go.
	WorkSlots int
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// Geometry computes the layout for p.
func (p Params) Geometry() Geometry {
	var g Geometry
	g.SlotSize = alignUp(SlotHeaderSize+p.MaxPayload, 64)
	if p.MaxPayload >= 64<<10 {
		g.SlotSize = alignUp(SlotHeaderSize+p.MaxPayload, 4096)
	}
	g.PoolLen = p.RingLen + MaxSubscribers + 1
	g.TableOff = offTable
	g.RingOff = alignUp(offTable+MaxSubscribers*subEntrySize, 64)
	g.SlotsOff = alignUp(g.RingOff+8*p.RingLen, 4096)
	g.TotalSize = g.SlotsOff + g.PoolLen*g.SlotSize
	g.WorkSlots = min(p.RingLen+2, g.PoolLen)
	return g
}

// Region is a formatted ring over a byte mapping. All methods that touch
// shared words use sync/atomic (sequentially consistent in Go).
type Region struct {
	mem  []byte
	base unsafe.Pointer
	P    Params
	G    Geometry
	// file is the segment file behind the mapping; nil for anonymous
	// (intra-process) rings. The writer reserves slots through it.
	file *fileRef
}

func (r *Region) u64(off int) *uint64 { return (*uint64)(unsafe.Add(r.base, off)) }
func (r *Region) u32(off int) *uint32 { return (*uint32)(unsafe.Add(r.base, off)) }

func (r *Region) sub(i int) int         { return r.G.TableOff + i*subEntrySize }
func (r *Region) entry(i int) *uint64   { return r.u64(r.G.RingOff + 8*i) }
func (r *Region) slotOff(k int) int     { return r.G.SlotsOff + k*r.G.SlotSize }
func (r *Region) slotVer(k int) *uint64 { return r.u64(r.slotOff(k) + slVer) }
func (r *Region) payload(k int, n int) []byte {
	off := r.slotOff(k) + SlotHeaderSize
	return r.mem[off : off+n : off+r.P.MaxPayload]
}

// Mem is the whole mapping (for tests and tools).
func (r *Region) Mem() []byte { return r.mem }

func checksum(mem []byte) uint64 {
	h := fnv.New64a()
	h.Write(mem[:offChecksum])
	h.Write(mem[offTopic : offTopic+topicMax])
	return h.Sum64()
}
