package soak_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/internal/safefile/safefiletest"
	"github.com/hilrig/hilrig/report/soak"
)

const header = `{"kind":"header","header":{"schema_version":1}}` + "\n"

// TestReadRefusesNonRegular: a checkpoint named by a result's
// soak_checkpoint, -hilrig.soak-resume or `hilrig report html` must be a
// regular file. /dev/zero used to be read until out of memory (2.29 GB),
// and a FIFO blocked for ever, deaf to SIGTERM and SIGINT.
func TestReadRefusesNonRegular(t *testing.T) {
	fifo := safefiletest.FIFO(t, t.TempDir(), "soak.jsonl")
	for _, path := range []string{"/dev/zero", fifo} {
		if _, err := soak.Read(path); !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Errorf("Read(%s) = %v, want ErrNotRegular naming it", path, err)
		}
		if _, _, err := soak.Resume(path, time.Now()); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("Resume(%s) = %v, want ErrNotRegular", path, err)
		}
		if _, err := soak.IsCheckpointFile(path); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("IsCheckpointFile(%s) = %v, want ErrNotRegular", path, err)
		}
	}
}

// TestReadEndlessLineBounded: a regular checkpoint whose tail is one line
// of 128 MiB (NULs from a power cut, or garbage) is a torn tail read with
// bounded memory: the line is dropped past MaxCheckpointLine. It used to
// be buffered whole (and /dev/zero's endless one until out of memory).
func TestReadEndlessLineBounded(t *testing.T) {
	const size = 128 << 20
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	safefiletest.Sparse(t, path, []byte(header+`{"kind":"window","window":{"index":0}}`+"\n"), size)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	lg, err := soak.Read(path)
	runtime.ReadMemStats(&after)
	if err != nil || len(lg.Windows) != 1 || len(lg.Notes) != 1 || !strings.Contains(lg.Notes[0], "torn tail from line 3") {
		t.Fatalf("Read = %+v, %v; want one window and a torn tail note", lg, err)
	}
	// Less than the line itself: it is never held whole.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= size {
		t.Errorf("reading a %d MiB line allocated %d MiB, want less than the line", size>>20, alloc>>20)
	}
	if ok, err := soak.IsCheckpointFile(path); err != nil || !ok {
		t.Errorf("IsCheckpointFile = %v, %v; want true", ok, err)
	}
}

// TestReadWindowsCapped: a checkpoint of more than MaxCheckpointWindows
// windows is refused, naming the line, rather than held in memory.
func TestReadWindowsCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(header)
	for i := range soak.MaxCheckpointWindows + 1 {
		fmt.Fprintf(w, `{"kind":"window","window":{"index":%d}}`+"\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := fmt.Sprintf("line %d: more than %d windows", soak.MaxCheckpointWindows+2, soak.MaxCheckpointWindows)
	if _, err := soak.Read(path); !errors.Is(err, soak.ErrBadCheckpoint) || !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %v, want ErrBadCheckpoint with %q", err, want)
	}
}
