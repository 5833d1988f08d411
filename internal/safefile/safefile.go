// Package safefile reads configuration, key and fixture files without
// trusting them: regular files only (a FIFO never blocks the reader, a
// device such as /dev/zero is refused before any read), a size cap checked
// at fstat and again while reading (a file that grows stays bounded), and,
// for secrets, a permission check like OpenSSH's.
//
// Every function is safe for concurrent use and blocks only on the file
// system.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrRefused is matched (errors.Is) by every *Error: the file exists but is
// not something the caller may read. Each *Error also matches the one of
// ErrNotRegular, ErrTooLarge and ErrExposed that says why.
var (
	ErrRefused    = errors.New("file refused")
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
	ErrExposed    = errors.New("secret accessible to group or others")
)

// Error says which file was refused and why.
type Error struct {
	Path   string
	Kind   error  // ErrNotRegular, ErrTooLarge or ErrExposed
	Reason string // e.g. "not a regular file (a named pipe)"
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Is makes every *Error match ErrRefused and its Kind.
func (e *Error) Is(target error) bool { return target == ErrRefused || target == e.Kind }

// Open opens path for reading if it is a regular file of at most max bytes;
// limit names the cap in messages (e.g. "the 256 KiB limit for racks"). The
// caller closes the file and reads at most max+1 bytes from it. A missing
// file returns the os error (fs.ErrNotExist); a refused one an *Error.
func Open(path string, max int64, limit string) (*os.File, fs.FileInfo, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer; on a regular file the flag changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = &Error{Path: path, Kind: ErrNotRegular, Reason: fmt.Sprintf("not a regular file (%s)", Kind(st.Mode()))}
	case st.Size() > max:
		err = &Error{Path: path, Kind: ErrTooLarge, Reason: fmt.Sprintf("%d bytes, larger than %s", st.Size(), limit)}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Read reads a whole regular file of at most max bytes (see Open).
func Read(path string, max int64, limit string) ([]byte, error) {
	f, _, err := Open(path, max, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, max, limit)
}

// ReadPrivate is Read for secrets: it also refuses a file that its group or
// others may read or write (any of mode 0077), as OpenSSH does for private
// keys, naming the mode found.
func ReadPrivate(path string, max int64, limit string) ([]byte, error) {
	f, st, err := Open(path, max, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, &Error{Path: path, Kind: ErrExposed, Reason: fmt.Sprintf("mode %04o: a secret must not be accessible to group or others (chmod 600 %s)", perm, path)}
	}
	return readAll(f, path, max, limit)
}

func readAll(f *os.File, path string, max int64, limit string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, &Error{Path: path, Kind: ErrTooLarge, Reason: fmt.Sprintf("more than %s (it grew while being read)", limit)}
	}
	return data, nil
}

// Kind names a non-regular file mode for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
