package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent Write and String: a
// command's output or a logger written by one goroutine and read by the
// test on another. The zero value is ready to use and keeps everything.
type SyncBuffer struct {
	// Limit > 0 keeps a chatty writer's output bounded: once Limit bytes
	// are held, further writes are dropped (still reported written).
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p (unless Limit is reached); it never fails.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len() >= s.Limit {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
