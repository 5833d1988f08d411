// Package ptprig runs a real linuxptp grandmaster and slave in two network
// namespaces joined by a veth pair, with software timestamping, for tests
// and the sim rack. It follows shared/docs/ptp exactly: both daemons run
// with free_running 1 and kernel_leap 0 and without CAP_SYS_TIME (setpriv
// drops it from the bounding set), so nothing here can adjust this
// machine's clock; phc2sys is never run; the management sockets live in a
// private temp dir, never /var/run/ptp4l.
//
// Needs root (namespaces) and the Debian linuxptp package (ptp4l, and pmc
// for the tests that compare with it). [Available] names what is missing.
package ptprig

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/timesync"
)

//go:embed conf/gm.cfg
var gmCfg string

//go:embed conf/slave.cfg
var slaveCfg string

// Fixed MACs give fixed clock identities (shared/docs/ptp/README.md).
const (
	GMMAC    = "02:00:0a:e9:00:01"
	SlaveMAC = "02:00:0a:e9:00:02"
)

// ErrUnavailable: the rig cannot run here; the message names the missing
// piece (root, ip, ptp4l, setpriv).
var ErrUnavailable = errors.New("ptprig: unavailable")

// Available reports whether a rig can be started here.
func Available() error {
	if err := netns.Available(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, bin := range []string{"ptp4l", "setpriv"} {
		if _, err := exec.LookPath(bin); err != nil {
			hint := "apt-get install linuxptp"
			if bin == "setpriv" {
				hint = "apt-get install util-linux"
			}
			return fmt.Errorf("%w: %s not found in PATH (%s)", ErrUnavailable, bin, hint)
		}
	}
	return nil
}

// Role names one of the two daemons.
type Role string

// The two daemons of a rig.
const (
	GM    Role = "gm"
	Slave Role = "slave"
)

// Options tunes Start. nil means defaults.
type Options struct {
	// Logger receives daemon start/stop lines (nil: discard).
	Logger *slog.Logger
	// ReadyTimeout bounds waiting for a daemon's socket to answer (0 → 10 s).
	ReadyTimeout time.Duration
	// GMFirst starts the grandmaster, waits until its port is MASTER
	// (6–8 s: its announce receipt timeout), then starts the slave, as on
	// a rack where the GM is always up before the boards. Without it both
	// start together, which is faster overall but makes the slave's lock
	// include the GM's own start-up.
	GMFirst bool
	// MasterTimeout bounds waiting for the GM to become MASTER with
	// GMFirst (0 → 20 s).
	MasterTimeout time.Duration
}

// Rig is a running grandmaster + slave. Methods are safe for concurrent use.
type Rig struct {
	// Pair holds the namespaces: A is the grandmaster, B the slave.
	Pair *netns.Pair
	// Dir is the rig's private temp dir (configs, sockets, logs).
	Dir string
	// GMSocket and SlaveSocket are the ptp4l uds_address paths.
	GMSocket, SlaveSocket string
	// GMIdentity and SlaveIdentity are the clock identities from the MACs.
	GMIdentity, SlaveIdentity timesync.ClockIdentity
	// GMIface and SlaveIface are the veth ends inside the namespaces.
	GMIface, SlaveIface string

	log     *slog.Logger
	readyTo time.Duration

	mu      sync.Mutex
	procs   map[Role]*proc
	started map[Role]time.Time

	closeOnce sync.Once
	spawn     chan func()
	spawnDone chan struct{}
}

type proc struct {
	cmd  *exec.Cmd
	logf *os.File
	done chan struct{}
	err  error
}

// Start makes the namespaces, writes the configs and starts both daemons
// together, waits until both management sockets answer, and sends SET
// SYNCHRONIZATION_UNCERTAIN_NP 0 to the slave. The caller must Close the
// rig (t.Cleanup). Blocks for about a second; locking takes 11–13 s more.
func Start(ctx context.Context, opts *Options) (*Rig, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := Available(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Rig{log: log, readyTo: opts.ReadyTimeout, procs: map[Role]*proc{}, started: map[Role]time.Time{}, spawn: make(chan func()), spawnDone: make(chan struct{})}
	go r.spawner()
	if r.readyTo <= 0 {
		r.readyTo = 10 * time.Second
	}
	var err error
	r.GMIdentity, _ = timesync.ClockIdentityFromMAC(GMMAC)
	r.SlaveIdentity, _ = timesync.ClockIdentityFromMAC(SlaveMAC)
	r.Dir, err = os.MkdirTemp("", "hilrig-ptp-")
	if err != nil {
		return nil, fmt.Errorf("ptprig: %w", err)
	}
	// 0755 so a non-root reader reaches the socket itself and gets the
	// socket's own permission error (the case tests check).
	if err := os.Chmod(r.Dir, 0o755); err != nil {
		_ = os.RemoveAll(r.Dir)
		return nil, fmt.Errorf("ptprig: %w", err)
	}
	r.Pair, err = netns.NewPair(ctx, &netns.PairOptions{AMAC: GMMAC, BMAC: SlaveMAC})
	if err != nil {
		_ = os.RemoveAll(r.Dir)
		return nil, fmt.Errorf("ptprig: %w", err)
	}
	r.GMIface, r.SlaveIface = r.Pair.AIface, r.Pair.BIface
	r.GMSocket = filepath.Join(r.Dir, "gm.sock")
	r.SlaveSocket = filepath.Join(r.Dir, "sl.sock")
	err = r.writeConfig(GM)
	if err == nil {
		err = r.writeConfig(Slave)
	}
	if err == nil {
		err = r.StartDaemon(ctx, GM)
	}
	if err == nil && opts.GMFirst {
		to := opts.MasterTimeout
		if to <= 0 {
			to = 20 * time.Second
		}
		err = r.WaitState(ctx, GM, to, timesync.PortStateMaster)
	}
	if err == nil {
		err = r.StartDaemon(ctx, Slave)
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// Config rewrites a shared config for this rig: our uds_address and the
// interface section renamed to the veth end. Exported for the docs test.
func Config(base, udsPath, iface string) (string, error) {
	var out []string
	sawUDS, sawIface := false, false
	for _, line := range strings.Split(base, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "uds_address"):
			line = "uds_address             " + udsPath
			sawUDS = true
		case strings.HasPrefix(t, "[") && t != "[global]":
			line = "[" + iface + "]"
			sawIface = true
		}
		out = append(out, line)
	}
	if !sawUDS || !sawIface {
		return "", fmt.Errorf("ptprig: base config lacks uds_address or an [interface] section")
	}
	cfg := strings.Join(out, "\n")
	// Refuse any config that could let ptp4l touch the clock.
	for _, must := range []string{"free_running            1", "kernel_leap             0"} {
		if !strings.Contains(cfg, must) {
			return "", fmt.Errorf("ptprig: config lacks %q: refusing to run a ptp4l that may adjust the clock", must)
		}
	}
	return cfg, nil
}

func (r *Rig) cfgPath(role Role) string { return filepath.Join(r.Dir, string(role)+".cfg") }

// LogPath is the file the daemon's output goes to.
func (r *Rig) LogPath(role Role) string { return filepath.Join(r.Dir, string(role)+".log") }

// Socket returns the role's uds_address.
func (r *Rig) Socket(role Role) string {
	if role == GM {
		return r.GMSocket
	}
	return r.SlaveSocket
}

func (r *Rig) writeConfig(role Role) error {
	base, sock, iface := gmCfg, r.GMSocket, r.GMIface
	if role == Slave {
		base, sock, iface = slaveCfg, r.SlaveSocket, r.SlaveIface
	}
	cfg, err := Config(base, sock, iface)
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.cfgPath(role), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("ptprig: write %s config: %w", role, err)
	}
	return nil
}

// spawner owns the OS thread every daemon is forked from. Pdeathsig fires
// when the forking *thread* exits, and Go retires threads (e.g. after
// netns.Do, whose locked goroutine exits): forking from an arbitrary
// thread got a healthy ptp4l SIGKILLed mid-test. This thread lives until
// Close, so Pdeathsig now means "the rig (or the test binary) is gone".
func (r *Rig) spawner() {
	runtime.LockOSThread()
	// No Unlock: when this goroutine returns the thread exits, and any
	// daemon still alive gets SIGKILL from the kernel.
	defer close(r.spawnDone)
	for f := range r.spawn {
		f()
	}
}

func (r *Rig) onSpawner(f func() error) error {
	errc := make(chan error, 1)
	r.spawn <- func() { errc <- f() }
	return <-errc
}

// StartDaemon starts (or restarts after KillDaemon) one daemon, waits for
// its socket to answer and, for the slave, sends SET
// SYNCHRONIZATION_UNCERTAIN_NP 0 (free_running 1 otherwise keeps it
// UNCALIBRATED). Blocks until the socket answers or ReadyTimeout.
func (r *Rig) StartDaemon(ctx context.Context, role Role) error {
	r.mu.Lock()
	if p := r.procs[role]; p != nil {
		r.mu.Unlock()
		return fmt.Errorf("ptprig: %s already running (pid %d)", role, p.cmd.Process.Pid)
	}
	ns := r.Pair.A
	if role == Slave {
		ns = r.Pair.B
	}
	logf, err := os.OpenFile(r.LogPath(role), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("ptprig: %w", err)
	}
	// ip netns exec and setpriv both exec, so the pid is ptp4l's own.
	// No CAP_SYS_TIME: even a misconfigured ptp4l cannot adjtimex.
	cmd := ns.Command(context.Background(), "setpriv", "--bounding-set", "-sys_time", "--",
		"ptp4l", "-f", r.cfgPath(role), "-m")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = daemonProcAttr()
	if err := r.onSpawner(cmd.Start); err != nil {
		r.mu.Unlock()
		_ = logf.Close()
		return fmt.Errorf("ptprig: start %s ptp4l: %w", role, err)
	}
	p := &proc{cmd: cmd, logf: logf, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); _ = logf.Close(); close(p.done) }()
	r.procs[role] = p
	r.started[role] = time.Now()
	r.mu.Unlock()
	r.log.Info("ptp4l started", "role", role, "pid", cmd.Process.Pid, "uds", r.Socket(role))
	return r.waitReady(ctx, role, p)
}

func (r *Rig) waitReady(ctx context.Context, role Role, p *proc) error {
	ctx, cancel := context.WithTimeout(ctx, r.readyTo)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("ptprig: %s ptp4l exited at start: %v; log:\n%s", role, p.err, r.Tail(role, 20))
		default:
		}
		src, err := timesync.DialPTP4L(ctx, r.Socket(role), &timesync.PTP4LOptions{PHC: "off", RequestTimeout: 200 * time.Millisecond})
		if err == nil {
			_, err = src.Status(ctx)
			if err == nil && role == Slave {
				err = src.SetSynchronizationUncertain(ctx, false)
			}
			_ = src.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("ptprig: %s ptp4l socket %s not ready: %w (last: %v); log:\n%s", role, r.Socket(role), ctx.Err(), last, r.Tail(role, 20))
		case <-tick.C:
		}
	}
}

// WaitState polls the role's port state every 100 ms until it is one of
// want, or fails after timeout naming the last state. Blocks.
func (r *Rig) WaitState(ctx context.Context, role Role, timeout time.Duration, want ...timesync.PortState) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src, err := timesync.DialPTP4L(ctx, r.Socket(role), &timesync.PTP4LOptions{PHC: "off"})
	if err != nil {
		return fmt.Errorf("ptprig: %w", err)
	}
	defer src.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var st timesync.Status
	for {
		st, err = src.Status(ctx)
		if err == nil {
			for _, w := range want {
				if st.PortState == w {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ptprig: %s not in %v after %v: last state %s, err %v", role, want, timeout, st.PortState, err)
		case <-tick.C:
		}
	}
}

// Started returns when the role's daemon was last started (zero if never).
func (r *Rig) Started(role Role) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[role]
}

// KillDaemon SIGKILLs one daemon (a crash, not a clean stop) and reaps it.
// Its socket file stays behind, as after a real crash. Blocks until reaped.
func (r *Rig) KillDaemon(ctx context.Context, role Role) error {
	r.mu.Lock()
	p := r.procs[role]
	delete(r.procs, role)
	r.mu.Unlock()
	if p == nil {
		return fmt.Errorf("ptprig: %s not running", role)
	}
	killGroup(p.cmd.Process.Pid)
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("ptprig: reap %s ptp4l pid %d: %w", role, p.cmd.Process.Pid, ctx.Err())
	}
	r.log.Info("ptp4l killed", "role", role, "pid", p.cmd.Process.Pid)
	return nil
}

// Running reports whether the role's daemon is running.
func (r *Rig) Running(role Role) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.procs[role]
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Tail returns the last n lines of the role's log (diagnostics).
func (r *Rig) Tail(role Role, n int) string {
	b, err := os.ReadFile(r.LogPath(role))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Close kills and reaps both daemons, deletes the namespaces and removes
// the temp dir (configs, sockets, logs). Idempotent.
func (r *Rig) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, role := range []Role{Slave, GM} {
		r.mu.Lock()
		p := r.procs[role]
		r.mu.Unlock()
		if p != nil {
			if err := r.KillDaemon(ctx, role); err != nil {
				errs = append(errs, err)
			}
		}
	}
	r.closeOnce.Do(func() { close(r.spawn); <-r.spawnDone })
	if r.Pair != nil {
		if err := r.Pair.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.Dir != "" {
		if err := os.RemoveAll(r.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
