package harness_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/sqlite"
)

// A store on a full disk (a 1 MiB tmpfs holding the report directory's
// store): the report itself goes elsewhere and is written, the error
// names the store and says the disk is full, and the run imports into
// a store with room.
func TestWriteReportStoreOnFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "hilrig-full", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	dbPath := filepath.Join(mnt, "results.db")
	tc, dir := suiteTC(t, "sqlite:"+dbPath, "run-full")
	// Fill the tmpfs but for a few KiB: the store opens, the Put fails.
	s, err := sqlite.Open(context.Background(), dbPath, "test", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break // ENOSPC: the disk is full
		}
	}
	f.Close()
	var out bytes.Buffer
	p, err := tc.WriteReport(storeReport(t), &out)
	if err != nil {
		t.Fatalf("a store failure failed the report: %v", err)
	}
	msg := fmt.Sprint(p.StoreErr)
	if !errors.Is(p.StoreErr, store.ErrStore) || !strings.Contains(msg, "sqlite:"+dbPath) || !strings.Contains(msg, "full") ||
		!strings.Contains(msg, "hilrig report import "+p.RunResult) {
		t.Fatalf("store error %v", p.StoreErr)
	}
	if _, err := report.ReadFile(p.RunResult); err != nil {
		t.Fatalf("result.json not written: %v", err)
	}
	other := "sqlite:" + filepath.Join(dir, "other.db")
	if o := mustImport(t, other, tc.ReportDir, p.RunResult); !strings.Contains(o, "/run-full, 1 cases") {
		t.Fatalf("import output %s", o)
	}
}
