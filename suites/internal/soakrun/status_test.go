package soakrun

import (
	"strings"
	"testing"
	"time"
)

// The progress line says how far the soak is and when it ends.
func TestStatusLineETA(t *testing.T) {
	s := Status{Elapsed: 18 * time.Hour, Remaining: 54 * time.Hour, ETA: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	l := s.String()
	if !strings.HasPrefix(l, "elapsed 18h0m0s (25.0%), remaining 54h0m0s (ETA 2026-12-05 01:00:00Z)") {
		t.Fatalf("line %q", l)
	}
	if l := (Status{}).String(); !strings.Contains(l, "(ETA ?)") {
		t.Fatalf("before start: %q", l)
	}
}
