package rig

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/internal/ddsshm"
)

// peerShm records the Fast DDS SHM segments the rig's peer agents made,
// so Close removes them after a killed agent (a SIGKILLed Fast DDS
// participant leaves every one of its files; a clean stop leaves none)
// — only those: the rig never touches another process's segments.
type peerShm struct {
	mu   sync.Mutex
	segs map[string]bool
}

// add records segments a peer agent on this machine holds.
func (p *peerShm) add(segs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.segs == nil {
		p.segs = map[string]bool{}
	}
	for _, s := range segs {
		p.segs[s] = true
	}
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

// recordPeerShm records the Fast DDS segments a's process holds, as its
// started message listed them (agentproto.Started.PeerShm), for removal
// after the agent ended: by the rig on this machine (Close), over SSH on
// an SSH board (stop, Kill). A vm board's /dev/shm ends with its guest.
// The list comes from the agent: every entry is checked before it is kept.
func (a *Agent) recordPeerShm(files []string) error {
	if len(files) == 0 {
		return nil
	}
	if len(files) > ddsshm.MaxFiles {
		return fmt.Errorf("board %s: the agent listed %d shared-memory files, at most %d", a.Board.Name, len(files), ddsshm.MaxFiles)
	}
	for _, f := range files {
		if err := ddsshm.Valid(f); err != nil {
			return fmt.Errorf("board %s: the agent's started message: %w", a.Board.Name, err)
		}
	}
	switch {
	case a.Board.OnController():
		if a.shm != nil {
			a.shm.add(files)
		}
	case a.ssh != nil && a.remoteBin != "":
		a.mu.Lock()
		for _, f := range files {
			if !slices.Contains(a.remoteShm, f) {
				a.remoteShm = append(a.remoteShm, f)
			}
		}
		a.mu.Unlock()
	}
	return nil
}

// recordHeldShm records, for an agent on this machine about to be
// killed, the Fast DDS segments its process holds now: Fast DDS makes some
// after the started message listed the others (a participant's segment
// once discovery first sends over shared memory, later on a loaded
// machine), and a killed participant leaves every one. Best effort: a
// process already gone holds nothing. Does not block beyond reading its
// /proc files.
func (a *Agent) recordHeldShm() {
	if !a.Board.OnController() || a.shm == nil || a.proc.PID <= 0 {
		return
	}
	if segs, err := ddsshm.Files(a.proc.PID, ddsshm.Dir); err == nil {
		a.shm.add(segs)
	}
}

// remoteShmCleanWait bounds the clean-up command on an SSH board.
const remoteShmCleanWait = 10 * time.Second

// cleanRemoteShm removes, on an SSH board, the recorded Fast DDS segments
// no live process owns (`hilrig-peer shm-clean`, the agent binary the
// board runs): call it once the agent exited, before the SSH connection
// closes. Bounded by remoteShmCleanWait.
func (a *Agent) cleanRemoteShm() error {
	a.mu.Lock()
	files := a.remoteShm
	a.remoteShm = nil
	a.mu.Unlock()
	if len(files) == 0 || a.ssh == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteShmCleanWait)
	defer cancel()
	cmd := deploy.ShellQuote(a.remoteBin) + " shm-clean"
	for _, f := range files {
		cmd += " " + deploy.ShellQuote(f)
	}
	if _, err := a.ssh.Run(ctx, cmd, nil); err != nil {
		return fmt.Errorf("board %s: remove the Fast DDS shared memory its killed agent left: %w", a.Board.Name, err)
	}
	return nil
}
