package shm

// Test hooks into the layout.

func (r *Region) SlotVer(k int) *uint64 { return r.slotVer(k) }
func (r *Region) Entry(i int) *uint64   { return r.entry(i) }
func (r *Region) Head() *uint64         { return r.u64(offHead) }

const PosShift = posShift

// Abandon gives up the writer's lease and nothing else, as its process
// dying would.
func (w *Writer) Abandon() { w.r.dropLease(w.lease) }

// Abandon gives up the reader's lease and nothing else, as its process
// dying would.
func (rd *Reader) Abandon() { rd.r.dropLease(rd.lease) }

// DropDead runs the writer's dead-subscriber sweep.
func (w *Writer) DropDead() { w.dropDead() }
