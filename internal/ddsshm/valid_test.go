package ddsshm

import (
	"strings"
	"testing"
)

// TestValid: a segment list from an agent or a command line names only
// Fast DDS segments in Dir — no other directory, no traversal, no lock
// file on its own, nothing a shell or a path could read differently.
func TestValid(t *testing.T) {
	for _, ok := range []string{"/dev/shm/fastrtps_16aecb0887d57384", "/dev/shm/fastrtps_port7411"} {
		if err := Valid(ok); err != nil {
			t.Errorf("Valid(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "/dev/shm/fastrtps_", "/dev/shm/other", "/tmp/fastrtps_1", "/dev/shm/fastrtps_1/../../etc/passwd",
		"/dev/shm/fastrtps_a_el", "/dev/shm/fastrtps_a b", "/dev/shm/fastrtps_a;rm", "dev/shm/fastrtps_1",
		"/dev/shm/fastrtps_" + strings.Repeat("a", 120),
	} {
		if err := Valid(bad); err == nil {
			t.Errorf("Valid(%q) = nil, want an error", bad)
		}
	}
}
