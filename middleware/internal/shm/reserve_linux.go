package shm

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// Space reservation.
//
// A segment file is created with ftruncate, which on tmpfs makes it
// sparse: a page is allocated on its first touch through the mapping,
// and when the filesystem is full (Docker's default /dev/shm is 64 MB)
// that touch is answered with SIGBUS, which kills a Go process with
// "unexpected fault address" instead of returning an error. So every
// page the protocol writes is reserved with fallocate(2) before it is
// first touched, and a failure becomes ErrNoSpace naming the file.
//
// What is reserved, and when:
//
//   - At creation: the header, table and ring entries, plus the working
//     set of the pool, slots [0, WorkSlots) = Slots+2 slots (see
//     Geometry.WorkSlots). A contract that cannot even run fails here.
//   - When a publisher opens the ring (NewWriter): the working set again
//     (a no-op for pages that exist) — a file made by a creator that did
//     not reserve is covered too.
//   - On the first use of any other slot by this writer (Acquire): that
//     slot, with one fallocate syscall, once per slot per writer. Those
//     slots are used only while subscribers hold several slots at once
//     (up to 16 more). If that fails, Acquire returns ErrNoSpace and the
//     publish fails; nothing is written and nothing faults.
//   - Writer.ReserveAll reserves the whole pool (Slots+17 slots) up
//     front, for callers who prefer to pay the memory once and never see
//     a first-use syscall or a late ErrNoSpace.
//
// With NodeOptions.HugePages the slots are madvised MADV_HUGEPAGE, and
// then every reservation first faults its range in through the mapping
// with madvise(MADV_POPULATE_WRITE) (Linux 5.14), and fallocates after.
// On a tmpfs mounted huge=advise only a fault through a madvised mapping
// allocates 2 MiB pages; fallocate has no mapping to consult and
// allocates 4 KiB pages, which stay small. The populate is best effort:
// it never writes the memory and never raises SIGBUS (a fault it cannot
// satisfy is an EFAULT or ENOMEM return), and the fallocate that follows
// commits whatever it left (a no-op over populated pages) and is the one
// whose error is reported, as without huge pages.
//
// Readers never write slots and only read slots the writer committed
// (reserved before commit), so they never touch an unreserved page.
// Anonymous (intra-process) rings have no file and are not reserved:
// their pages count against memory, not a tmpfs size.

// fileRef names the file a Region maps, for fallocate and fstat.
type fileRef struct {
	fd   int
	path string
	// populate is the whole mapping of the file when its slots are
	// madvised MADV_HUGEPAGE (reserve faults pages in through it), nil
	// otherwise.
	populate []byte
}

// reserve commits the pages of [off, off+n) of the segment file: with
// huge pages advised it populates them through the mapping first (see
// above), then it fallocates. It returns the raw errno of the fallocate.
// 0 allocs.
func (f *fileRef) reserve(off, n int64) error {
	if n <= 0 {
		return nil
	}
	if f.populate != nil {
		for {
			// Ignored but for EINTR: fallocate below reserves what this
			// did not and reports why it could not.
			if err := unix.Madvise(f.populate[off:off+n], unix.MADV_POPULATE_WRITE); !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	return f.fallocate(off, n)
}

// fallocate commits the pages of [off, off+n) of the segment file with
// FALLOC_FL_KEEP_SIZE, so a reservation never changes the file size
// behind other processes. It returns the raw errno (nil when done); a
// filesystem without fallocate (EOPNOTSUPP) is left sparse, as before.
// 0 allocs. Not on the steady-state hot path (see above).
func (f *fileRef) fallocate(off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(f.fd, unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case errors.Is(err, unix.EINTR):
			// shmem_fallocate gives up on a pending signal (the Go
			// runtime preempts with SIGURG) and undoes its work: retry.
			continue
		case errors.Is(err, unix.EOPNOTSUPP):
			return nil
		}
		return err
	}
}

// fail turns a fallocate error into one naming the file and what the
// bytes were for: ErrNoSpace for ENOSPC/ENOMEM.
func (f *fileRef) fail(err error, off, n int64, what string, total int64) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
		return f.noSpace(n, what, total)
	}
	return fmt.Errorf("%s: fallocate %d bytes at offset %d (%s): %w", f.path, n, off, what, err)
}

// noSpace builds the ErrNoSpace error: the file, what needed how many
// bytes, the filesystem's free space, and what to do about it.
func (f *fileRef) noSpace(n int64, what string, total int64) error {
	var fs unix.Statfs_t
	free, size := "unknown", "unknown"
	suggest := total
	if unix.Fstatfs(f.fd, &fs) == nil {
		free = human(int64(fs.Bavail) * fs.Bsize)
		size = human(int64(fs.Blocks) * fs.Bsize)
		// What is in use now plus this whole segment.
		suggest += int64(fs.Blocks-fs.Bavail) * fs.Bsize
	}
	dir := filepath.Dir(f.path)
	return fmt.Errorf("%s: %w: %s needs %d bytes (%s) but the filesystem of %s has %s free of %s; "+
		"the whole segment is %s (Slots+17 slots of the contract's slot size): enlarge it to at least %d MiB "+
		"(Docker: --shm-size=%dm; otherwise mount -o remount,size=%dm %s) or declare a smaller MaxPayload or fewer Slots",
		f.path, ErrNoSpace, what, n, human(n), dir, free, size, human(total),
		(suggest+1<<20-1)>>20, (suggest+1<<20-1)>>20, (suggest+1<<20-1)>>20, dir)
}

// human prints a byte count in binary units.
func human(n int64) string { return bytesize.Approx(n, " ") }

// reserveSlots reserves pool slots [k, k+count) of r's file; a no-op for
// anonymous rings. 0 allocs unless it fails.
func (r *Region) reserveSlots(k, count int) error {
	if r.file == nil {
		return nil
	}
	off, n := int64(r.slotOff(k)), int64(count*r.G.SlotSize)
	if err := r.file.reserve(off, n); err != nil {
		what := fmt.Sprintf("slots %d..%d (%d bytes each; the working set is %d of a pool of %d)", k, k+count-1, r.G.SlotSize, r.G.WorkSlots, r.G.PoolLen)
		if count == 1 && k >= r.G.WorkSlots {
			what = fmt.Sprintf("pool slot %d (first used because subscribers hold messages beyond the working set of %d slots)", k, r.G.WorkSlots)
		}
		return r.file.fail(err, off, n, what, int64(r.G.TotalSize))
	}
	return nil
}

// checkSize fstats r's file and fails, naming it, if it is smaller than
// the layout (it shrank after we mapped it: any access past the new end
// would raise SIGBUS). A no-op for anonymous rings.
func (r *Region) checkSize() error {
	if r.file == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(r.file.fd, &st); err != nil {
		return fmt.Errorf("%s: %w", r.file.path, err)
	}
	if st.Size < int64(r.G.TotalSize) {
		return fmt.Errorf("%s: %w: file shrank to %d bytes after it was mapped, the layout needs %d "+
			"(truncated by another process?); close every user of it and remove it with `hilrig shm clean`",
			r.file.path, ErrBadSegment, st.Size, r.G.TotalSize)
	}
	return nil
}

// CheckSize fails with ErrBadSegment, naming the file, if the segment file
// is now smaller than its layout (see checkSize). Does not block.
func (s *Segment) CheckSize() error { return s.checkSize() }
