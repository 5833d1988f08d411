package shm

import "sync/atomic"

// counter is a statistic of one Reader or Writer. The count lives in
// process memory, where Stats reads it; add also writes it (plus base)
// into the segment, for other processes to read (hilrig shm ls). The
// segment's copy is never read back: anyone who can write the file can
// overwrite it, and a Stats that returned it once reported Delivered =
// 18388096062736361663 (issue 31).
//
// Ordering: own is the one atomic (the owner's Store, Stats' Load from
// any goroutine). The segment's copy is a plain aligned 8-byte store,
// which every supported architecture (amd64, arm64) writes single-copy
// atomically, so another process never sees a torn value; it is a
// statistic with no ordering against the ring (nothing synchronises on
// it), so it needs no fence. An atomic store there (XCHG on amd64) cost
// ~5 ns per 16-byte send, measured in issue 31.
//
// Only the goroutine that owns the Reader or Writer calls add; load is
// safe from any goroutine. 0 allocs.
type counter struct {
	own atomic.Uint64
	// base is the segment's count when this end started (a Writer goes on
	// from the previous publisher's totals); it only offsets the copy.
	base uint64
}

// add counts d and writes the segment's copy at mirror.
func (c *counter) add(mirror *uint64, d uint64) {
	v := c.own.Load() + d // one writer: load and store need no CAS
	c.own.Store(v)
	*mirror = c.base + v
}

// load returns the count of this end.
func (c *counter) load() uint64 { return c.own.Load() }
