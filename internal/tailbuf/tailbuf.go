// Package tailbuf keeps the last bytes written to it: the tail of a
// process's output (an agent's stderr, a device under test's console).
// Leaf.
package tailbuf

import "sync"

// Buffer keeps the last N bytes written. Safe for concurrent use; Write
// never fails and never blocks on anything but the other callers.
type Buffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

// New returns a Buffer keeping the last n bytes.
func New(n int) *Buffer { return &Buffer{n: n} }

// Write appends b, dropping the oldest bytes past the limit.
func (t *Buffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// String is the bytes kept, oldest first.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
