package shm

import "sync/atomic"

// counter is a statistic of one Reader or Writer. The count lives in
// process memory, where Stats reads it; add also stores it (plus base)
// into the segment, for other processes to read (hilrig shm ls). The
// segment's copy is never read back: anyone who can write the file can
// overwrite it, and a Stats that returned it once reported Delivered =
// 18388096062736361663 (issue 31).
//
// Only the goroutine that owns the Reader or Writer calls add; load is
// safe from any goroutine. 0 allocs.
type counter struct {
	own atomic.Uint64
	// base is the segment's count when this end started (a Writer goes on
	// from the previous publisher's totals); it only offsets the copy.
	base uint64
}

// add counts d and stores the segment's copy at mirror.
func (c *counter) add(mirror *uint64, d uint64) {
	v := c.own.Load() + d // one writer: load and store need no CAS
	c.own.Store(v)
	atomic.StoreUint64(mirror, c.base+v)
}

// load returns the count of this end.
func (c *counter) load() uint64 { return c.own.Load() }
