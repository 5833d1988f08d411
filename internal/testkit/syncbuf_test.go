package testkit_test

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
)

func TestSyncBufferLimit(t *testing.T) {
	var all testkit.SyncBuffer
	capped := testkit.SyncBuffer{Limit: 8}
	for range 4 {
		for _, b := range []*testkit.SyncBuffer{&all, &capped} {
			if n, err := b.Write([]byte("abcde")); n != 5 || err != nil {
				t.Fatalf("Write = %d, %v; want 5, nil (a capped buffer still reports the write)", n, err)
			}
		}
	}
	if got := all.String(); got != strings.Repeat("abcde", 4) {
		t.Errorf("unlimited buffer kept %q", got)
	}
	// Writes stop once Limit bytes are held: the second write crossed it.
	if got := capped.String(); got != "abcdeabcde" {
		t.Errorf("Limit 8 kept %q, want the writes made before 8 bytes were held", got)
	}
}
