package shm

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func openOnce(path string, p Params, o OpenOptions) (s *Segment, retry bool, err error) {
	g := p.Geometry()
	created := true
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, uint32(o.Mode.Perm()))
	if errors.Is(err, unix.EEXIST) {
		created = false
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil, true, err // removed under us: create it
		}
	}
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil, false, fmt.Errorf("%s: %w: %v", path, ErrPermission, err)
		}
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
			if created {
				unix.Unlink(path)
			}
		}
	}()
	// Probe: if nobody else holds the file, a missing or half header is
	// final (no creator is still writing it), so do not wait for it.
	alone := !created && unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
	// Shared lock for our lifetime; a cleaner holds it exclusively while
	// it unlinks, so after we get it we check the path still is our file.
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		return nil, false, fmt.Errorf("%s: flock: %w", path, err)
	}
	var st, pst unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if err := unix.Stat(path, &pst); err != nil || pst.Ino != st.Ino || pst.Dev != st.Dev {
		created = false // not ours to unlink any more
		return nil, true, fmt.Errorf("%s: replaced while opening", path)
	}
	if created {
		if err := unix.Fchmod(fd, uint32(o.Mode.Perm())); err != nil {
			return nil, false, fmt.Errorf("%s: chmod: %w", path, err)
		}
		if o.Gid >= 0 {
			if err := unix.Fchown(fd, -1, o.Gid); err != nil {
				return nil, false, fmt.Errorf("%s: chown to gid %d: %w", path, o.Gid, err)
			}
		}
		if err := unix.Ftruncate(fd, int64(g.TotalSize)); err != nil {
			return nil, false, fmt.Errorf("%s: size %d bytes: %w", path, g.TotalSize, err)
		}
		mem, err := unix.Mmap(fd, 0, g.TotalSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, false, fmt.Errorf("%s: mmap %d bytes: %w", path, g.TotalSize, err)
		}
		f := &fileRef{fd: fd, path: path}
		// Advise before anything allocates a page: on a tmpfs mounted
		// huge=advise only a fault through a madvised mapping allocates
		// a 2 MiB page, and a page once allocated small stays small.
		huge := o.HugePages && adviseHuge(mem, g)
		if huge {
			f.populate = mem
		}
		// ftruncate leaves the file sparse; reserve before the first
		// touch so a full tmpfs is an error here, not a SIGBUS later
		// (reserve.go says what is reserved when).
		what, n := fmt.Sprintf("the header plus the working set of %d slots (%d bytes each)", g.WorkSlots, g.SlotSize), g.SlotsOff+g.WorkSlots*g.SlotSize
		if o.ReserveAll {
			what, n = fmt.Sprintf("the header plus all %d slots (%d bytes each)", g.PoolLen, g.SlotSize), g.TotalSize
		}
		if err := f.reserve(0, int64(n)); err != nil {
			unix.Munmap(mem)
			return nil, false, f.fail(err, 0, int64(n), what, int64(g.TotalSize))
		}
		r := format(mem, p, o.PID, o.NowNs)
		r.file, r.name = f, path
		s = &Segment{Region: r, Path: path, Created: true, HugeAdvised: huge}
	} else {
		if int(st.Uid) != os.Geteuid() && !o.AllowForeign {
			return nil, false, fmt.Errorf("%s: %w: owned by uid %d, we are uid %d (set NodeOptions.AllowForeignOwner to accept it)", path, ErrPermission, st.Uid, os.Geteuid())
		}
		wait := o.InitWait
		if alone {
			wait = 0
		}
		r, err := attachFile(fd, path, wait)
		if err != nil {
			return nil, false, err
		}
		if err := Compare(path, r.P, p); err != nil {
			unix.Munmap(r.mem)
			return nil, false, err
		}
		r.file, r.name = &fileRef{fd: fd, path: path}, path
		s = &Segment{Region: r, Path: path}
		// Pages the creator reserved keep the size they got; a slot a
		// writer of ours reserves later is populated huge (reserve.go).
		if o.HugePages && adviseHuge(r.mem, r.G) {
			s.HugeAdvised, r.file.populate = true, r.mem
		}
	}
	ok = true
	return s, false, nil
}

// adviseHuge madvises the slots of mem MADV_HUGEPAGE and reports whether
// the kernel accepted it. The header stays on base pages.
func adviseHuge(mem []byte, g Geometry) bool {
	return unix.Madvise(mem[g.SlotsOff:], unix.MADV_HUGEPAGE) == nil
}

// attachFile maps and validates an existing segment, waiting up to
// initWait for a creator that is still formatting it.
func attachFile(fd int, path string, initWait time.Duration) (*Region, error) {
	deadline := time.Now().Add(initWait)
	for {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		hdr := offTable + MaxSubscribers*subEntrySize
		if st.Size >= int64(hdr) {
			mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return nil, fmt.Errorf("%s: mmap: %w", path, err)
			}
			hi, err := ParseHeader(mem, st.Size, path)
			if err != nil && hi.TotalSize > 0 {
				// A valid header over a file shorter than its layout:
				// a creator sizes the file before it writes the header,
				// so nobody is still making this one. It was truncated
				// after creation; waiting would not help.
				unix.Munmap(mem)
				return nil, err
			}
			if err == nil && hi.Ready {
				if int64(hi.TotalSize) < st.Size {
					// Map exactly the layout; extra bytes are ignored.
					unix.Munmap(mem)
					if mem, err = unix.Mmap(fd, 0, hi.TotalSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
						return nil, fmt.Errorf("%s: mmap: %w", path, err)
					}
				}
				return attach(mem, hi), nil
			}
			unix.Munmap(mem)
			if !time.Now().Before(deadline) {
				if err == nil {
					err = fmt.Errorf("%s: %w: never finished initialising (creator pid %d died?); remove it with `hilrig shm clean`", path, ErrBadSegment, hi.CreatePID)
				}
				return nil, err
			}
		} else if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%s: %w: truncated: %d bytes, a header needs at least %d", path, ErrBadSegment, st.Size, hdr)
		}
		time.Sleep(2 * time.Millisecond) // creator is between open and format
	}
}

// Close unmaps the segment; if no other process holds it, the file is
// removed (so a clean shutdown leaves nothing in /dev/shm).
func (s *Segment) Close() error {
	err := unix.Munmap(s.mem)
	if unix.Flock(s.file.fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		var st, pst unix.Stat_t
		if unix.Fstat(s.file.fd, &st) == nil && unix.Stat(s.Path, &pst) == nil && st.Ino == pst.Ino && st.Dev == pst.Dev {
			unix.Unlink(s.Path)
		}
	}
	unix.Close(s.file.fd)
	return err
}

// NewAnon makes a ring in anonymous shared memory for the intra-process
// path. With huge, it first tries MAP_HUGETLB and reports whether it got it.
func NewAnon(p Params, pid int, nowNs int64, huge bool) (*Region, bool, error) {
	g := p.Geometry()
	if huge {
		size := alignUp(g.TotalSize, 2<<20)
		mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
		if err == nil {
			r := format(mem, p, pid, nowNs)
			r.anon = &anonLeases{}
			return r, true, nil
		}
	}
	mem, err := unix.Mmap(-1, 0, g.TotalSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false, fmt.Errorf("mmap %d anonymous bytes: %w", g.TotalSize, err)
	}
	r := format(mem, p, pid, nowNs)
	r.anon = &anonLeases{}
	return r, false, nil
}

// FreeAnon unmaps a ring made by NewAnon.
func FreeAnon(r *Region) error { return unix.Munmap(r.mem) }
