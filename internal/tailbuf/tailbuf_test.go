package tailbuf_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/tailbuf"
)

func TestBuffer(t *testing.T) {
	b := tailbuf.New(5)
	for _, s := range []string{"abc", "de", "fghi"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "efghi" {
		t.Errorf("String = %q, want the last 5 bytes efghi", got)
	}
}
