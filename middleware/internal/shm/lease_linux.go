package shm

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// tryLease opens a new description of f's file (so its lock is its own,
// not shared with f.fd or other endpoints of this process) and takes a
// write lock on byte off. See lease.go.
func (f *fileRef) tryLease(off int) (leaseHold, bool, error) {
	fd, err := f.reopen()
	if err != nil {
		return leaseHold{}, false, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(off), Len: 1}
	for {
		err = unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return leaseHold{off: off, fd: fd}, true, nil
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES):
		unix.Close(fd)
		return leaseHold{}, false, nil
	}
	unix.Close(fd)
	return leaseHold{}, false, fmt.Errorf("%s: lease byte %d: fcntl(F_OFD_SETLK): %w", f.path, off, err)
}

// reopen returns a new open file description of the same file as f.fd:
// through /proc/self/fd when /proc is mounted (works even if the path was
// renamed), else through the path, checked to be the same inode.
func (f *fileRef) reopen() (int, error) {
	var want, got unix.Stat_t
	if err := unix.Fstat(f.fd, &want); err != nil {
		return -1, fmt.Errorf("%s: %w", f.path, err)
	}
	for _, p := range []string{"/proc/self/fd/" + strconv.Itoa(f.fd), f.path} {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Fstat(fd, &got) == nil && got.Dev == want.Dev && got.Ino == want.Ino {
			return fd, nil
		}
		unix.Close(fd)
	}
	return -1, fmt.Errorf("%s: cannot reopen the segment for a lease (removed or replaced while in use)", f.path)
}

// ofdHeld reports whether an open file description other than fd's holds
// a lock on byte off of fd's file. fd must hold no byte locks itself (a
// description never conflicts with its own locks). Works on a read-only
// descriptor. One syscall.
func ofdHeld(fd, off int) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(off), Len: 1}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

// closeLease releases a file lease: closing the only descriptor of the
// description drops its locks.
func closeLease(h leaseHold) {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

// sizeNow describes the file's current size for a fault error.
func (r *Region) sizeNow() string {
	if r.file == nil {
		return ""
	}
	var st unix.Stat_t
	if unix.Fstat(r.file.fd, &st) != nil {
		return ""
	}
	return fmt.Sprintf("; the file now has %d bytes, the layout needs %d", st.Size, r.G.TotalSize)
}

// shrunk reports whether r's file is now smaller than the layout, and its
// size. False for anonymous rings and when fstat fails.
func (r *Region) shrunk() (int64, bool) {
	if r.file == nil {
		return 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(r.file.fd, &st) != nil {
		return 0, false
	}
	return st.Size, st.Size < int64(r.G.TotalSize)
}
