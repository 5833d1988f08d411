package gpiosim

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveStale: a chip whose label matches and whose creator is gone is
// removed; one whose creator lives, one with another label and a file that
// is not a chip are kept.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead := uint32(child.Process.Pid)
	mk := func(name, label string, creator uint32) {
		t.Helper()
		c, err := Create(name, Config{Dir: dir, Lines: 1, RingSize: 2, Label: label})
		if err != nil {
			t.Fatal(err)
		}
		if creator != 0 {
			c.u32(hCreator).Store(creator)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mk("left", "hilrig-rig-rig1-1", dead)
	mk("running", "hilrig-rig-rig2-1", 0)
	mk("byhand", "hilrig-gpiosim", dead)
	junk := filepath.Join(dir, FilePrefix+"junk")
	if err := os.WriteFile(junk, []byte("not a chip"), 0o644); err != nil {
		t.Fatal(err)
	}

	removed, err := RemoveStale(dir, "hilrig-rig-")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"left"}) {
		t.Fatalf("removed %v, want [left]", removed)
	}
	for name, want := range map[string]bool{"left": false, "running": true, "byhand": true, "junk": true} {
		_, err := os.Stat(filepath.Join(dir, FilePrefix+name))
		if got := err == nil; got != want {
			t.Errorf("%s: present %v, want %v (%v)", name, got, want, err)
		}
	}
}
