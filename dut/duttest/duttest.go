// Package duttest is the test kit of tests that run a device under test
// without a rig (dut's own tests, the DUT soak's).
package duttest

import (
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/middleware"
)

// RemoveSegmentsAtEnd removes, when the test ends, the shared-memory
// segments of domain that the program and the controller's ends left (a
// publisher killed or stopped cannot unlink). The rig does the same for
// its own domain at Close; these tests run without one. Register it
// before the program starts, so it runs after the program's Stop. A
// segment some process still uses is left and reported.
func RemoveSegmentsAtEnd(t testing.TB, domain string) {
	t.Cleanup(func() {
		segs, err := middleware.ListSegments("")
		if err != nil {
			t.Errorf("list segments: %v", err)
			return
		}
		for _, s := range segs {
			if s.Domain != domain {
				continue
			}
			if ok, err := middleware.RemoveSegment(s.Path); err != nil || !ok {
				t.Errorf("segment %s of the test's domain not removed (in use: %v, err %v)", filepath.Base(s.Path), !ok, err)
			}
		}
	})
}
