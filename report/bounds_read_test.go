package report_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/internal/safefile/safefiletest"
	"github.com/hilrig/hilrig/report"
)

// TestReadFileBounded: ReadFile reads regular files of at most
// MaxResultFile bytes. /dev/zero used to be read until the process ran out
// of memory, and a FIFO blocked for ever; a file over the cap is refused at
// fstat, before any read (the test's one is sparse).
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := safefiletest.FIFO(t, dir, "fifo.json")
	big := filepath.Join(dir, "big.json")
	safefiletest.Sparse(t, big, []byte(`{"schema_version": 1}`), report.MaxResultFile+1)
	for _, c := range []struct {
		name, path string
		kind       error
	}{
		{"device", "/dev/zero", safefile.ErrNotRegular},
		{"fifo", fifo, safefile.ErrNotRegular},
		{"over the cap", big, safefile.ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := report.ReadFile(c.path)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("ReadFile(%s) = %v, want %v naming the file", c.path, err, c.kind)
			}
		})
	}
}

// TestDecodeRefusesNegativeCounts: a count, size or duration below zero in
// a result is refused with an error naming the field; they used to be
// imported as they were.
func TestDecodeRefusesNegativeCounts(t *testing.T) {
	for _, c := range []struct{ json, field string }{
		{`{"schema_version": 1, "cases": [{"name": "a", "lost": -3}]}`, "cases[0].lost is -3"},
		{`{"schema_version": 1, "cases": [{"name": "a"}, {"name": "b", "sent": -1}]}`, "cases[1].sent is -1"},
		{`{"schema_version": 1, "cases": [{"name": "a", "summary": {"count": -1000}}]}`, "cases[0].summary.count is -1000"},
		{`{"schema_version": 1, "cases": [{"name": "a", "excluded": -2}]}`, "cases[0].excluded is -2"},
		{`{"schema_version": 1, "cases": [{"name": "a", "stages": {"count": 5, "wake": {"count": -5}}}]}`, "cases[0].stages.wake.count is -5"},
		{`{"schema_version": 1, "cases": [{"name": "a", "counters": [{"endpoint": "e", "major_faults": -7}]}]}`, "cases[0].counters[0].major_faults is -7"},
		{`{"schema_version": 1, "cases": [{"name": "a", "scope": {"scope": {"count": -1}}}]}`, "cases[0].scope.scope.count is -1"},
		{`{"schema_version": 1, "run": {"boards": [{"name": "b", "wakeup_floor": {"count": -4}}]}}`, "run.boards[0].wakeup_floor.count is -4"},
	} {
		t.Run(c.field, func(t *testing.T) {
			_, err := report.Decode([]byte(c.json), "f.json")
			if !errors.Is(err, report.ErrBadResult) || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), "f.json") {
				t.Errorf("Decode = %v, want ErrBadResult naming f.json and %q", err, c.field)
			}
		})
	}
	if _, err := report.Decode([]byte(`{"schema_version": 1, "cases": [{"name": "a", "sent": 10, "delivered": 10}]}`), "f.json"); err != nil {
		t.Errorf("Decode of non-negative counts: %v", err)
	}
}
