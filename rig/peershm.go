package rig

import (
	"fmt"
	"strings"
	"sync"

	"github.com/hilrig/hilrig/internal/ddsshm"
)

// shmDir is where the peers' shared memory lives (Fast DDS's default).
const shmDir = "/dev/shm"

// peerShm records the Fast DDS SHM segments the rig's peer agents made,
// so Close removes them after a killed agent (a SIGKILLed Fast DDS
// participant leaves every one of its files; a clean stop leaves none)
// — only those: the rig never touches another process's segments.
type peerShm struct {
	mu   sync.Mutex
	segs map[string]bool
}

// record adds the Fast DDS segments process pid has open. Called once
// an endpoint on a Fast DDS peer started: its participant and its
// listening ports exist by then.
func (p *peerShm) record(pid int) error {
	segs, err := ddsshm.Files(pid, shmDir)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.segs == nil {
		p.segs = map[string]bool{}
	}
	for _, s := range segs {
		p.segs[s] = true
	}
	return nil
}

// clean removes the recorded segments no live process owns (call it once
// the rig's agents ended).
func (p *peerShm) clean() error {
	p.mu.Lock()
	segs := make([]string, 0, len(p.segs))
	for s := range p.segs {
		segs = append(segs, s)
	}
	p.segs = nil
	p.mu.Unlock()
	if _, err := ddsshm.RemoveZombies(segs); err != nil {
		return fmt.Errorf("rig: remove Fast DDS shared memory of killed peer agents: %w", err)
	}
	return nil
}

// recordPeerShm records the Fast DDS segments of a's process after an
// endpoint on middleware mw started, when a runs on this machine (its
// /dev/shm is the controller's; an SSH or VM board's is not).
func (a *Agent) recordPeerShm(mw string) error {
	if a.shm == nil || !strings.HasPrefix(mw, "fastdds") || a.proc.PID == 0 || !a.Board.OnController() {
		return nil
	}
	if err := a.shm.record(a.proc.PID); err != nil {
		return fmt.Errorf("board %s: %w", a.Board.Name, err)
	}
	return nil
}
