//go:build linux

package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The rig's record of its peers' Fast DDS segments: only segments a
// recorded process held are removed, and of those only the ones no live
// process owns (the _el flock Fast DDS holds while it lives).
func TestPeerShmCleansOnlyItsZombies(t *testing.T) {
	base := filepath.Join(shmDir, fmt.Sprintf("fastrtps_hilrigtest%d", os.Getpid()))
	dead, live, foreign := base+"a", base+"b", base+"c"
	var all []string
	for _, s := range []string{dead, live, foreign} {
		all = append(all, s, s+"_el")
	}
	for _, f := range all {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Skipf("no writable %s: %v", shmDir, err)
		}
	}
	t.Cleanup(func() {
		for _, f := range all {
			os.Remove(f)
		}
	})
	// This process stands for a peer agent: it holds dead's and live's
	// lock files open while recorded, as a Fast DDS participant does.
	hold := func(seg string) *os.File {
		f, err := os.OpenFile(seg+"_el", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return f
	}
	d, l := hold(dead), hold(live)
	defer l.Close()
	var p peerShm
	if err := p.record(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if !p.segs[dead] || !p.segs[live] || p.segs[foreign] {
		t.Fatalf("recorded %v: want %s and %s, not %s (not held)", p.segs, dead, live, foreign)
	}
	d.Close() // the participant of dead is killed: its lock goes with it
	if err := p.clean(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dead, dead + "_el"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left: its owner is gone", f)
		}
	}
	for _, f := range []string{live, live + "_el", foreign, foreign + "_el"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s removed: owned by a live process or never recorded (%v)", f, err)
		}
	}
}
