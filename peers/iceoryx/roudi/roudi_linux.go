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
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RouDi files: iceoryx 2.0 holds an flock on lockFile while a RouDi runs,
// listens on socketFile (and leaves socketFile.lock behind) and maps the management segment and one data
// segment named after the user in /dev/shm.
const (
	lockFile   = "/tmp/iox-unique-roudi.lock"
	socketFile = "/tmp/roudi"
	mgmtShm    = "/dev/shm/iceoryx_mgmt"

	// hilrigLock is held (flock, exclusive) by the process that started a
	// RouDi through Start, for the daemon's whole life, and by Exclusive.
	// RouDi's files have fixed names, so two starters at once — two test
	// binaries, two agents — would otherwise see "none runs", start two
	// daemons, and the loser, which aborts, would remove the winner's
	// socket while cleaning up after itself.
	hilrigLock = "/tmp/hilrig-roudi.lock"
)

// ErrNoRouDi: iox-roudi is neither running nor installed.
var ErrNoRouDi = errors.New("iceoryx: RouDi (iox-roudi) is not running and cannot be started")

// ErrRunning: Start found a RouDi that no hilrig Start owns (one started
// by hand or by another tool); a caller may use it instead.
var ErrRunning = errors.New("iceoryx: a RouDi already runs on this host")

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
	cmd     *exec.Cmd
	dir     string // its config
	exited  chan struct{}
	release func() // drops hilrigLock
	owned   bool   // the daemon held lockFile: RouDi's fixed files are ours to remove
}

// Exclusive takes the host-wide lock hilrig's RouDi starters share and
// returns its release. It polls (every 20 ms) until the lock is free or
// ctx ends; a holder is named by PID in the error. While it is held no
// hilrig process starts or stops a RouDi, so a caller can check Running
// and act on the answer. The lock dies with the holding process.
func Exclusive(ctx context.Context) (release func(), err error) {
	f, err := os.OpenFile(hilrigLock, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("iceoryx: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("iceoryx: lock %s: %w", hilrigLock, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("iceoryx: waiting for %s (held by %s): %w", hilrigLock, lockHolders(hilrigLock), context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lockHolders names the processes holding an flock on path, from
// /proc/locks, for error messages ("pid 123", or "an unknown process").
func lockHolders(path string) string {
	pids := flockPIDs(path)
	if len(pids) == 0 {
		return "an unknown process"
	}
	var b strings.Builder
	for i, p := range pids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "pid %d", p)
	}
	return b.String()
}

// flockPIDs returns the PIDs /proc/locks lists as holding an flock on
// path's inode. Lines read "1: FLOCK ADVISORY WRITE 1234 00:1f:5678 0 EOF";
// a line that does not parse is skipped, not trusted.
func flockPIDs(path string) []int {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(f[5], ":")
		if len(dev) != 3 {
			continue
		}
		var maj, min, ino uint64
		if _, err := fmt.Sscanf(dev[0]+" "+dev[1]+" "+dev[2], "%x %x %d", &maj, &min, &ino); err != nil {
			continue
		}
		if ino != st.Ino || maj != uint64(unix.Major(st.Dev)) || min != uint64(unix.Minor(st.Dev)) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(f[4], "%d", &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
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
// and waits (≤ 10 s, ctx) until it holds its lock and listens. A RouDi
// another hilrig process started is waited for (ctx) until it is stopped:
// Start holds hilrig's starter lock from before it looks for a running
// RouDi until Stop. It fails with ErrNoRouDi when iox-roudi is not
// installed, and if a RouDi hilrig did not start already runs.
func Start(ctx context.Context, maxPayload int) (*RouDi, error) {
	bin, err := exec.LookPath("iox-roudi")
	if err != nil {
		return nil, fmt.Errorf("%w: %w (Debian package iceoryx)", ErrNoRouDi, err)
	}
	release, err := Exclusive(ctx)
	if err != nil {
		return nil, err
	}
	if up, err := Running(); err != nil {
		release()
		return nil, err
	} else if up {
		release()
		return nil, fmt.Errorf("%w (%s holds %s)", ErrRunning, lockHolders(lockFile), lockFile)
	}
	dir, err := os.MkdirTemp("", "hilrig-roudi-")
	if err != nil {
		release()
		return nil, fmt.Errorf("iceoryx: %w", err)
	}
	cfg := filepath.Join(dir, "roudi.toml")
	if err := os.WriteFile(cfg, []byte(mempools(maxPayload)), 0o644); err != nil {
		os.RemoveAll(dir)
		release()
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
		release()
		return nil, fmt.Errorf("iceoryx: start %s: %w", bin, err)
	}
	r := &RouDi{cmd: cmd, dir: dir, exited: make(chan struct{}), release: release}
	go func() { cmd.Wait(); close(r.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Ready when our daemon — by PID, not merely some RouDi — holds
		// RouDi's lock and its socket exists.
		if !r.owned && slices.Contains(flockPIDs(lockFile), cmd.Process.Pid) {
			r.owned = true
		}
		if r.owned {
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
// config. See StopWithin.
func (r *RouDi) Stop() error { return r.StopWithin(5 * time.Second) }

// StopWithin is Stop with grace as the bound on RouDi's own shutdown
// before it is killed. Blocks until the daemon has exited and its files
// are removed.
//
// A RouDi that shuts down sends SIGTERM to every process still registered
// with it — this one included, since iceoryx 2.0 never unregisters a
// runtime — and then waits, up to its kill delay (45 s), for them to
// exit. So SIGTERM is caught (and dropped) until the daemon is gone, and
// its arrival means RouDi has done all it will do but wait for this
// process, which exits only after Stop: the daemon is killed then. Before,
// Stop always ran into its 5 s bound, an agent with an iceoryx peer took
// more than the rig's 5 s StopTimeout to say bye, and the rig killed it
// (leaving the Fast DDS segments of its other peers behind).
func (r *RouDi) StopWithin(grace time.Duration) error {
	term := make(chan os.Signal, 4)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return r.cleanup()
	case <-term: // RouDi now only waits for us
	case <-time.After(grace):
	}
	r.cmd.Process.Kill()
	<-r.exited
	return r.cleanup()
}

// cleanup removes the config and, if the daemon ever held RouDi's lock,
// RouDi's fixed-name files; a daemon that never did (it aborted because
// another RouDi runs) owns none of them. Then it drops hilrig's lock.
func (r *RouDi) cleanup() error {
	defer r.release()
	if !r.owned {
		return os.RemoveAll(r.dir)
	}
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
