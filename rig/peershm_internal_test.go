//go:build linux

package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/ddsshm"
)

// The rig's record of its peers' Fast DDS segments: only segments a
// recorded process held are removed, and of those only the ones no live
// process owns (the _el flock Fast DDS holds while it lives).
func TestPeerShmCleansOnlyItsZombies(t *testing.T) {
	base := filepath.Join(ddsshm.Dir, fmt.Sprintf("fastrtps_hilrigtest%d", os.Getpid()))
	dead, live, foreign := base+"a", base+"b", base+"c"
	var all []string
	for _, s := range []string{dead, live, foreign} {
		all = append(all, s, s+"_el")
	}
	for _, f := range all {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Skipf("no writable %s: %v", ddsshm.Dir, err)
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
	held, err := ddsshm.Files(os.Getpid(), ddsshm.Dir) // what the agent's started message lists
	if err != nil {
		t.Fatal(err)
	}
	p.add(held)
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

// TestRecordPeerShmRefusesForeignPaths: the started message's file list
// comes from the agent; a path outside Fast DDS's segments, or too many,
// is refused naming the board, and nothing of that list is kept.
func TestRecordPeerShmRefusesForeignPaths(t *testing.T) {
	b := &fixtures.Board{Name: "board-x"}
	var p peerShm
	a := &Agent{Board: b, shm: &p}
	many := make([]string, ddsshm.MaxFiles+1)
	for i := range many {
		many[i] = fmt.Sprintf("%s/fastrtps_%d", ddsshm.Dir, i)
	}
	for _, list := range [][]string{{ddsshm.Dir + "/fastrtps_ok", "/etc/passwd"}, {ddsshm.Dir + "/fastrtps_1/../x"}, many} {
		err := a.recordPeerShm(list)
		if err == nil || !strings.Contains(err.Error(), "board-x") {
			t.Errorf("recordPeerShm(%.60q…) = %v, want an error naming board-x", list, err)
		}
	}
	if len(p.segs) != 0 {
		t.Errorf("kept %v from refused lists", p.segs)
	}
}
