package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// handle is an opened lease directory that passed checkDir. Files in it
// are opened relative to fd, so a path swapped after the check is never
// used.
type handle struct {
	path string
	fd   int
}

// openDir makes path (0755) if it is missing, opens it without following
// a symbolic link and checks it: owned by the effective uid, writable by
// its owner only.
func openDir(path string) (*handle, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("lease: directory %s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, &DirError{Path: path, Rule: "the lease directory is a symbolic link; it must be a directory owned by the rig's user"}
		}
		return nil, fmt.Errorf("lease: directory %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lease: directory %s: %w", path, err)
	}
	euid := os.Geteuid()
	rule := ""
	switch {
	case int(st.Uid) != euid:
		rule = fmt.Sprintf("the lease directory is owned by uid %d; it must be owned by the rig's user (uid %d)", st.Uid, euid)
	case st.Mode&0o022 != 0:
		rule = fmt.Sprintf("the lease directory (mode %04o) is writable by group or others; only its owner may write it", st.Mode&0o7777)
	}
	if rule != "" {
		unix.Close(fd)
		return nil, &DirError{Path: path, Rule: rule}
	}
	return &handle{path: path, fd: fd}, nil
}

func (h *handle) close() { unix.Close(h.fd) }

// openAt opens name in the directory, never through a symbolic link, and
// checks it is a regular file.
func (h *handle) openAt(name string, flags int, perm uint32) (*os.File, error) {
	p := filepath.Join(h.path, name)
	fd, err := unix.Openat(h.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, perm)
	if errors.Is(err, unix.ELOOP) {
		return nil, &DirError{Path: p, Rule: "is a symbolic link; files in the lease directory must be regular files (left in place for inspection)"}
	}
	if err != nil {
		return nil, fmt.Errorf("lease: %s: %w", p, &os.PathError{Op: "open", Path: p, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lease: %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &DirError{Path: p, Rule: fmt.Sprintf("not a regular file (mode %#o); files in the lease directory must be regular files", st.Mode)}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// lockGuard takes an exclusive flock on <rack>.lock, polling (flock has no
// timeout) until ctx ends. The critical sections it guards are a few
// reads, an unlink and a create, so the wait is short.
func (h *handle) lockGuard(ctx context.Context, rack string) (func(), error) {
	f, err := h.openAt(rack+".lock", unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the flock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lease: flock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lease: waiting for %s: %w", f.Name(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// openLease opens rack's lease file read-only; nil, nil when there is
// none.
func (h *handle) openLease(rack string) (*os.File, error) {
	f, err := h.openAt(rack+".lease", unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	return f, err
}

// create replaces rack's lease file by a new one (O_EXCL: never an
// existing file or link) with content b, locked by the returned file.
// Under the guard, with no live holder.
func (h *handle) create(rack string, b []byte) (*os.File, error) {
	if err := h.remove(rack); err != nil {
		return nil, err
	}
	f, err := h.openAt(rack+".lease", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	err = lockShared(f)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		_ = h.remove(rack)
		return nil, fmt.Errorf("lease: %s: %w", f.Name(), err)
	}
	return f, nil
}

// remove unlinks rack's lease file (missing is fine). A holder's lock
// stays on the unlinked inode, where nobody looks.
func (h *handle) remove(rack string) error {
	err := unix.Unlinkat(h.fd, rack+".lease", 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("lease: remove %s: %w", h.file(rack), err)
	}
	return nil
}

// same reports whether f is still rack's lease file (not removed or
// replaced since it was opened).
func (h *handle) same(f *os.File, rack string) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		return false, fmt.Errorf("lease: %s: %w", f.Name(), err)
	}
	err := unix.Fstatat(h.fd, rack+".lease", &b, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lease: %s: %w", h.file(rack), err)
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// wholeFile is a lock over the whole file, however long it grows.
func wholeFile(typ int16) unix.Flock_t { return unix.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0} }

// lockShared takes a shared OFD lock on f (members of a group share it).
// Under the guard no exclusive lock exists, so it does not wait.
func lockShared(f *os.File) error {
	lk := wholeFile(unix.F_RDLCK)
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return fmt.Errorf("fcntl(F_OFD_SETLK): %w", err)
			}
			return nil
		}
	}
}

// heldByOther reports whether an open file description other than f's
// holds a lock on f's file: a live holder, in any process, PID namespace
// or mount namespace. f must hold no lock itself.
func heldByOther(f *os.File) (bool, error) {
	lk := wholeFile(unix.F_WRLCK)
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("fcntl(F_OFD_GETLK): %w", err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// PidFD is a pidfd of process pid (pidfd_open(2), Linux ≥ 5.3), readable
// once the process has exited; for [Keep]. The caller closes it.
func PidFD(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("lease: pidfd_open(%d): %w", pid, err)
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid)), nil
}

// keepPoll is how often Keep looks whether the lease was released (its
// file unlinked); the holder's exit wakes it at once.
const keepPoll = 250 * time.Millisecond

// Keep holds a lease handed off to this process (lease, the descriptor of
// [Lease.Handoff]) until the process of pidfd exits, the lease is released
// or broken (its file removed) or ctx ends; the caller then closes lease,
// dropping the lock. Blocks; wakes every 250 ms.
func Keep(ctx context.Context, lease, pidfd *os.File) error {
	fds := []unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, int(keepPoll/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("lease: keep: poll %s: %w", pidfd.Name(), err)
		}
		if n > 0 {
			return nil // the holder exited
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(lease.Fd()), &st); err != nil {
			return fmt.Errorf("lease: keep: %s: %w", lease.Name(), err)
		}
		if st.Nlink == 0 {
			return nil // released
		}
	}
	return nil
}
