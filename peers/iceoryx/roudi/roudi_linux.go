package roudi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// RouDi files: iceoryx 2.0 holds an flock on lockFile while a RouDi runs,
// listens on socketFile (and leaves socketFile.lock behind) and maps the management segment and one data
// segment named after the user in /dev/shm.
const (
	lockFile   = "/tmp/iox-unique-roudi.lock"
	socketFile = "/tmp/roudi"
	mgmtShm    = "/dev/shm/iceoryx_mgmt"
)

// ErrNoRouDi: iox-roudi is neither running nor installed.
var ErrNoRouDi = errors.New("iceoryx: RouDi (iox-roudi) is not running and cannot be started")

// Running reports whether a RouDi daemon runs on this host (its lock
// is held).
func Running() (bool, error) {
	f, err := os.OpenFile(lockFile, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("iceoryx: %w", err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("iceoryx: lock %s: %w", lockFile, err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

// RouDi is a daemon this process started.
type RouDi struct {
	cmd    *exec.Cmd
	dir    string // its config
	exited chan struct{}
}

// mempools returns RouDi's mempool config for payloads up to maxPayload:
// the chunk sizes of iceoryx's example configuration up to the first that
// holds maxPayload plus the chunk and user headers, with counts that cover
// deep queues of small messages and a few in flight of the largest.
func mempools(maxPayload int) string {
	var b strings.Builder
	b.WriteString("[general]\nversion = 1\n\n[[segment]]\n\n")
	const over = 128 // chunk header + our 8-byte user header, aligned
	pools := []struct{ size, count int }{{128, 10000}, {1024, 5000}, {16384, 1000}, {131072, 200}, {524288, 50}, {1048576 + 4096, 32}, {4194304 + 4096, 16}, {16777216 + 4096, 8}}
	for _, p := range pools {
		fmt.Fprintf(&b, "[[segment.mempool]]\nsize = %d\ncount = %d\n\n", p.size, p.count)
		if p.size >= maxPayload+over {
			break
		}
	}
	return b.String()
}

// Start starts iox-roudi with a configuration sized for maxPayload
// and waits (≤ 10 s, ctx) until it holds its lock. It fails with
// ErrNoRouDi when iox-roudi is not installed, and if a RouDi already runs.
func Start(ctx context.Context, maxPayload int) (*RouDi, error) {
	bin, err := exec.LookPath("iox-roudi")
	if err != nil {
		return nil, fmt.Errorf("%w: %w (Debian package iceoryx)", ErrNoRouDi, err)
	}
	if up, err := Running(); err != nil {
		return nil, err
	} else if up {
		return nil, errors.New("iceoryx: a RouDi already runs on this host")
	}
	dir, err := os.MkdirTemp("", "hilrig-roudi-")
	if err != nil {
		return nil, fmt.Errorf("iceoryx: %w", err)
	}
	cfg := filepath.Join(dir, "roudi.toml")
	if err := os.WriteFile(cfg, []byte(mempools(maxPayload)), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("iceoryx: %w", err)
	}
	// Monitoring on (the default): RouDi frees what a dead client held.
	cmd := exec.Command(bin, "-c", cfg, "-l", "warning")
	cmd.Stdout, cmd.Stderr = nil, nil
	// No Pdeathsig: Go delivers it when the starting OS thread exits, not
	// the process, which would stop RouDi under a running agent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("iceoryx: start %s: %w", bin, err)
	}
	r := &RouDi{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(r.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		up, err := Running()
		if err == nil && up {
			if _, err := os.Stat(socketFile); err == nil {
				// RouDi read its config at start: remove it now, so an
				// agent killed before Stop leaves no directory behind.
				os.RemoveAll(r.dir)
				return r, nil
			}
		}
		select {
		case <-r.exited:
			r.cleanup()
			return nil, fmt.Errorf("iceoryx: %s exited while starting (%v)", bin, cmd.ProcessState)
		case <-ctx.Done():
			r.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("iceoryx: %s not ready within 10s", bin)
		}
	}
}

// PID is the daemon's process id.
func (r *RouDi) PID() int { return r.cmd.Process.Pid }

// Stop ends the daemon by its PID (SIGTERM, SIGKILL after 5 s) and
// removes what it leaves: its socket, lock, shared-memory segments and
// config.
//
// A RouDi that shuts down sends SIGTERM to every process still registered
// with it — this one included, since iceoryx 2.0 never unregisters a
// runtime — so SIGTERM is caught (and dropped) until the daemon is gone.
func (r *RouDi) Stop() error {
	term := make(chan os.Signal, 4)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
	}
	return r.cleanup()
}

func (r *RouDi) cleanup() error {
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	rm(socketFile)
	rm(socketFile + ".lock")
	rm(lockFile)
	rm(mgmtShm)
	if u, err := user.Current(); err == nil {
		rm("/dev/shm/" + u.Username)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
