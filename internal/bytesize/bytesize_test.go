package bytesize_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/bytesize"
)

func TestExact(t *testing.T) {
	for _, tc := range []struct {
		n        int64
		sep, out string
	}{
		{0, "", "0B"}, {8, "", "8B"}, {64, " ", "64 B"}, {1000, "", "1000B"}, {1024, "", "1KiB"}, {4096, " ", "4 KiB"},
		{1536, "", "1536B"}, {1 << 20, "", "1MiB"}, {10 << 20, " ", "10 MiB"}, {3 << 19, "", "1536KiB"}, {1 << 30, "", "1GiB"},
		{-4096, "", "-4KiB"},
	} {
		if got := bytesize.Exact(tc.n, tc.sep); got != tc.out {
			t.Errorf("Exact(%d, %q) = %q, want %q", tc.n, tc.sep, got, tc.out)
		}
	}
}

func TestApprox(t *testing.T) {
	for _, tc := range []struct {
		n        int64
		sep, out string
	}{
		{0, " ", "0 B"}, {512, "", "512B"}, {1024, " ", "1.0 KiB"}, {1536, "", "1.5KiB"}, {1 << 20, " ", "1.0 MiB"},
		{1331 << 10, " ", "1.3 MiB"}, {5 << 29, " ", "2.5 GiB"},
	} {
		if got := bytesize.Approx(tc.n, tc.sep); got != tc.out {
			t.Errorf("Approx(%d, %q) = %q, want %q", tc.n, tc.sep, got, tc.out)
		}
	}
}
