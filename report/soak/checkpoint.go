package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// Checkpointer appends closed windows to a JSONL checkpoint file, fsyncing
// after every line, so a killed controller or a power cut loses at most the
// window that was open. Methods are safe for concurrent use and block on
// disk I/O (write + fsync, typically well under a second, once per window).
type Checkpointer struct {
	mu   sync.Mutex
	f    *os.File
	path string
	next int
	last time.Time // end of the last closed window
	buf  []byte
}

// Create starts a new checkpoint at path with h as its first line. It fails
// with ErrExists if the file exists (a soak never overwrites data; use
// Resume). h.SchemaVersion is set; h.Window defaults to 10 s.
func Create(path string, h Header) (*Checkpointer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s (resume it or choose another file)", ErrExists, path)
		}
		return nil, fmt.Errorf("soak: create checkpoint: %w", err)
	}
	h.SchemaVersion = SchemaVersion
	if h.Window <= 0 {
		h.Window = 10 * time.Second
	}
	if h.Started.IsZero() {
		h.Started = time.Now()
	}
	c := &Checkpointer{f: f, path: path, last: h.Started}
	if err := c.writeRecord(record{Kind: "header", Header: &h}); err != nil {
		f.Close()
		return nil, err
	}
	// Make the new directory entry durable too.
	syncDir(path)
	return c, nil
}

// Resume reopens an existing checkpoint for appending: it reads it (see
// Read), cuts off a torn last line, appends a Resume record marking the gap
// from the last closed window to now, and continues the window numbering.
// The returned Log is what the file held before the resume (summaries only).
func Resume(path string, now time.Time) (*Checkpointer, *Log, error) {
	lg, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	// Read refused anything but a regular file; O_NONBLOCK and the fstat
	// keep a file swapped since for a FIFO from blocking or being written.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("soak: resume: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errors.New("no longer a regular file")
		}
		return nil, nil, fmt.Errorf("soak: resume %s: %w", path, err)
	}
	dropped := lg.size - lg.goodSize
	if dropped > 0 {
		// A torn tail is never a complete record; remove it so the next line
		// starts on a line boundary.
		if err := f.Truncate(lg.goodSize); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("soak: resume %s: drop torn tail: %w", path, err)
		}
	}
	if _, err := f.Seek(0, 2); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("soak: resume %s: %w", path, err)
	}
	c := &Checkpointer{f: f, path: path, next: lg.NextIndex(), last: lg.Header.Started}
	if n := len(lg.Windows); n > 0 {
		c.last = lg.Windows[n-1].End
	}
	if lg.missingNewline {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("soak: resume %s: %w", path, err)
		}
	}
	r := Resumption{Time: now, AfterIndex: c.next - 1, GapFrom: c.last, GapTo: now, DroppedTailBytes: dropped}
	if err := c.writeRecord(record{Kind: "resume", Resume: &r}); err != nil {
		f.Close()
		return nil, nil, err
	}
	c.last = now
	return c, lg, nil
}

// NextIndex is the index the next appended window will get.
func (c *Checkpointer) NextIndex() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// Path is the checkpoint file.
func (c *Checkpointer) Path() string { return c.path }

// Append assigns w the next index, fills every stream's Summary from its
// Histogram, writes the window as one line and fsyncs. On error nothing is
// counted (the index is not consumed) and the error names the file.
func (c *Checkpointer) Append(w *Window) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return ErrClosed
	}
	w.Index = c.next
	for i := range w.Agents {
		for j := range w.Agents[i].Streams {
			s := &w.Agents[i].Streams[j]
			if s.Histogram != nil {
				s.Summary = s.Histogram.Summary()
			}
		}
	}
	if err := c.writeRecord(record{Kind: "window", Window: w}); err != nil {
		return err
	}
	c.next++
	c.last = w.End
	return nil
}

// writeRecord writes one line with a single write call and fsyncs.
// Caller holds mu (or owns c exclusively).
func (c *Checkpointer) writeRecord(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("soak: checkpoint %s: encode %s: %w", c.path, r.Kind, err)
	}
	c.buf = append(append(c.buf[:0], b...), '\n')
	if _, err := c.f.Write(c.buf); err != nil {
		return fmt.Errorf("soak: checkpoint %s: write: %w", c.path, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("soak: checkpoint %s: fsync: %w", c.path, err)
	}
	return nil
}

// Close syncs and closes the file. Further Appends fail with ErrClosed.
func (c *Checkpointer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Sync()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	if err != nil {
		return fmt.Errorf("soak: close checkpoint %s: %w", c.path, err)
	}
	return nil
}

func syncDir(path string) {
	dir := path
	for i := len(dir) - 1; i >= 0; i-- {
		if dir[i] == '/' {
			dir = dir[:i]
			break
		}
		if i == 0 {
			dir = "."
		}
	}
	if dir == "" {
		dir = "/"
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the file's own data is already synced
		d.Close()
	}
}
