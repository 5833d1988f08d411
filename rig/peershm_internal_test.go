//go:build linux

package rig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/deploy"
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

// TestKilledAgentsLateSegmentsRecorded: an agent killed without its bye
// (stop's timeout, Kill) has its Fast DDS segments recorded from its
// process first, so segments it made after its started message listed the
// others are removed too. Every faults-suite run on a loaded machine left
// one 32 MiB participant segment: the agent was killed at the rig's 5 s
// StopTimeout, and Fast DDS had made that segment after the listing.
func TestKilledAgentsLateSegmentsRecorded(t *testing.T) {
	seg := filepath.Join(ddsshm.Dir, fmt.Sprintf("fastrtps_hilrigtest%dlate", os.Getpid()))
	for _, f := range []string{seg, seg + "_el"} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Skipf("no writable %s: %v", ddsshm.Dir, err)
		}
		t.Cleanup(func() { os.Remove(f) })
	}
	// The "agent": a process holding the segment's lock file open, as a
	// participant does; its started message listed nothing.
	cmd := exec.Command("sh", "-c", "exec 3<>\"$1\"; echo ready; exec sleep 60", "sh", seg+"_el")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if _, err := out.Read(make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Board: &fixtures.Board{Name: "board-a", Reach: fixtures.Controller}, proc: &deploy.Process{PID: cmd.Process.Pid}, shm: &peerShm{}}
	a.recordHeldShm()
	if !a.shm.segs[seg] {
		t.Fatalf("recorded %v, want %s (held by the agent's process)", a.shm.segs, seg)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := a.shm.clean(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{seg, seg + "_el"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left after its agent was killed", f)
		}
	}
}
