package dut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/internal/procstat"
	"github.com/hilrig/hilrig/internal/tailbuf"
)

// Placement is where the run put the rack's shared things, as the rig
// made them: the caller fills it from its rig (rig.Domain, Rig.Chip,
// Rig.NetnsName). The dut package imports no rig.
type Placement struct {
	// Domain is the middleware domain of the run's topics.
	Domain string
	// Chip maps a rack chip name to the chip the run uses (a sim chip's
	// run-unique name); nil: names as written.
	Chip func(rackChip kind.Chip) kind.Chip
	// Netns maps a rack namespace name to the namespace the rig made;
	// nil or not found: the name as written.
	Netns func(logical string) (string, bool)
}

func (pl Placement) chip(c kind.Chip) kind.Chip {
	if pl.Chip == nil {
		return c
	}
	return pl.Chip(c)
}

// Options configures Start. nil means defaults.
type Options struct {
	// Args are appended to the rack's command (a suite's variant, e.g.
	// the example DUT's stall flag).
	Args []string
	// Env is added to the program's environment (KEY=VALUE), after Env's:
	// HILRIG_TRACE_MARKER=<a trace session's MarkerFile> lets it mark
	// its own events in the rig's kernel trace.
	Env []string
	// Build configures building a dut's build package (ModuleDir,
	// CacheDir; Package and the target are the dut's and its board's).
	Build deploy.BuildOptions
	// OutputDir, if set, is where the program's standard output is
	// written, dut-<name>.log, across restarts.
	OutputDir string
	// Logger receives starts, exits and restarts. Default: discard.
	Logger *slog.Logger
}

// Program is a DUT program the rig started on its board (or, for an
// external dut, the record that it runs there). Safe for concurrent use.
type Program struct {
	DUT   *fixtures.DUT
	Board *fixtures.Board

	argv []string // after the environment: the command as run
	env  []string
	pl   Placement
	log  *slog.Logger
	file *os.File // OutputDir's log, nil without

	// bridge is the peer binary's ROS 2 bridge beside the program (ROS 2
	// ports), nil without; bridgeOut its output's tail.
	bridge    *deploy.Process
	bridgeOut *tailbuf.Buffer
	bridgeDir string

	mu       sync.Mutex
	proc     *deploy.Process
	out      *tailbuf.Buffer
	starts   int
	stopped  bool
	copyDone chan struct{}
}

// Start starts dut name of rack on its board through the board's
// deployer (local child or `ip netns exec`; ssh and vm boards are not
// done yet: ErrUnsupported): built first when the dut has build (a Go
// package, or a directory of C sources built by BuildC), its ports and
// the run's domain passed in the environment (Env). A dut with ROS 2
// ports also gets the peer binary's bridge beside it on its board
// (ros2.go; ErrToolMissing when Cyclone DDS's tools are not installed).
// An external dut is not started (nor bridged); its Program only records
// it. Blocks for the build and the start, not for the program's
// readiness (Measure probes that).
func Start(ctx context.Context, rack *fixtures.Rack, name string, pl Placement, o *Options) (*Program, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d, err := rack.DUT(name)
	if err != nil {
		return nil, err
	}
	b, err := rack.Board(d.Board)
	if err != nil {
		return nil, fmt.Errorf("dut %s: %w", d.Name, err)
	}
	p := &Program{DUT: d, Board: b, pl: pl, log: opts.Logger, out: tailbuf.New(64 << 10)}
	if d.External {
		return p, nil
	}
	if b.Reach.Kind != fixtures.ReachLocal && b.Reach.Kind != fixtures.ReachNetns {
		return nil, fmt.Errorf("%w: dut %s: starting a program on a %s board (%s) is not done yet; local and netns boards only", errors.ErrUnsupported, d.Name, b.Reach, b.Name)
	}
	argv := append(append([]string{}, d.Command...), opts.Args...)
	if d.Build != "" {
		bin, err := build(ctx, d, opts.Build)
		if err != nil {
			return nil, fmt.Errorf("dut %s: build %s: %w", d.Name, d.Build, err)
		}
		argv[0] = bin
	}
	p.argv, p.env = argv, append(Env(d, pl), opts.Env...)
	if opts.OutputDir != "" {
		f, err := os.OpenFile(filepath.Join(opts.OutputDir, "dut-"+d.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dut %s: output log: %w", d.Name, err)
		}
		p.file = f
	}
	if err := p.start(ctx); err != nil {
		if p.file != nil {
			p.file.Close()
		}
		return nil, err
	}
	if hasROS2(d) {
		if err := p.startBridge(ctx, opts.Build); err != nil {
			_ = p.Stop()
			return nil, fmt.Errorf("dut %s: %w", d.Name, err)
		}
	}
	return p, nil
}

// build builds the dut's build package for its board: a C program (a
// directory of C sources, no Go) with BuildC into the build cache, else
// a Go package with deploy.Build.
func build(ctx context.Context, d *fixtures.DUT, bo deploy.BuildOptions) (string, error) {
	mod := bo.ModuleDir
	if mod == "" {
		var err error
		if mod, err = deploy.FindModule("."); err != nil {
			return "", err
		}
	}
	if isCDir(filepath.Join(mod, d.Build)) {
		cache := bo.CacheDir
		if cache == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			cache = filepath.Join(dir, "hilrig", "build")
		}
		out := filepath.Join(cache, "dut-c")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", err
		}
		return BuildC(ctx, mod, d.Build, out)
	}
	bo.Package, bo.GOOS, bo.GOARCH, bo.Peers = d.Build, "", "", nil
	return deploy.Build(ctx, bo)
}

// startBridge runs the peer binary's ROS 2 bridge for the dut's ROS 2
// ports on the program's board (same deployer, same namespace: its DDS
// side meets the program's on that namespace's loopback), in the dut's
// DDS domain. It lives until Stop; a restart of the program leaves it
// running (DDS matches the new endpoints again).
func (p *Program) startBridge(ctx context.Context, bo deploy.BuildOptions) error {
	cfg, err := BridgeConfig(p.DUT, p.pl)
	if err != nil {
		return fmt.Errorf("bridge config: %w", err)
	}
	bin, err := peerBin(ctx, bo)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hilrig-dut-bridge-")
	if err != nil {
		return err
	}
	p.bridgeDir = dir
	file := filepath.Join(dir, "bridge.json")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		return err
	}
	args := []string{"HILRIG_DDS_DOMAIN=" + strconv.FormatUint(uint64(DDSDomain(p.DUT, p.pl)), 10), bin, "bridge", "--config", file, "--dds", "cyclonedds", "--health", "1h", "--match-wait", "5s"}
	proc, err := p.startOnBoard(ctx, args)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	_ = proc.Stdin.Close()
	p.bridge, p.bridgeOut = proc, tailbuf.New(16<<10)
	go func() { _, _ = io.Copy(p.bridgeOut, proc.Stdout) }()
	p.log.Info("dut bridge started", "dut", p.DUT.Name, "where", proc.Where)
	return nil
}

// startOnBoard runs `env args…` on the program's board (local child or
// the board's namespace).
func (p *Program) startOnBoard(ctx context.Context, args []string) (*deploy.Process, error) {
	if p.Board.Reach.Kind == fixtures.ReachNetns {
		ns := p.Board.Reach.Netns
		if p.pl.Netns != nil {
			if real, ok := p.pl.Netns(ns); ok {
				ns = real
			}
		}
		return deploy.StartNetns(ctx, ns, "env", args...)
	}
	return deploy.StartLocal(ctx, "env", args...)
}

// Env is the environment the rig gives a dut program: HILRIG_DOMAIN, and
// per port HILRIG_<PORT>_TOPIC, _PAYLOAD and _DEPTH (topics: the
// middleware contract is {topic, max_payload, depth}, best effort) or _CHIP, _LINE and
// _ACTIVE_LOW (GPIO lines, the chip as the run named it); a ROS 2 port
// also _TYPE ("sensor_msgs/Imu"; its TOPIC is the ROS 2 name, the DDS
// topic rt/<name>), and with any ROS 2 port HILRIG_DDS_DOMAIN (DDSDomain).
// PORT is the port's name upper-cased with '.' and '-' as '_'.
func Env(d *fixtures.DUT, pl Placement) []string {
	env := []string{"HILRIG_DOMAIN=" + pl.Domain, "HILRIG_DUT=" + d.Name}
	for _, p := range append(append([]fixtures.DUTPort{}, d.Inputs...), d.Outputs...) {
		k := "HILRIG_" + strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(p.Name)) + "_"
		if p.GPIO != nil {
			env = append(env, k+"CHIP="+pl.chip(p.GPIO.Chip).String(), k+"LINE="+p.GPIO.Ref(), k+"ACTIVE_LOW="+strconv.FormatBool(p.GPIO.ActiveLow))
			continue
		}
		env = append(env, k+"TOPIC="+p.Topic, k+"PAYLOAD="+strconv.Itoa(p.PayloadOrDefault()), k+"DEPTH="+strconv.Itoa(TopicDepth))
		if isROS2(p) {
			env = append(env, k+"TYPE="+ros2Type(p))
		}
	}
	if hasROS2(d) {
		env = append(env, "HILRIG_DDS_DOMAIN="+strconv.FormatUint(uint64(DDSDomain(d, pl)), 10))
	}
	return env
}

// start runs the command once; p.mu is not held.
func (p *Program) start(ctx context.Context) error {
	// env(1) sets the environment on every deployer alike: the
	// deployers pass argv, not an environment.
	proc, err := p.startOnBoard(ctx, append(append([]string{}, p.env...), p.argv...))
	if err != nil {
		return fmt.Errorf("dut %s on %s: %w", p.DUT.Name, p.Board.Name, err)
	}
	_ = proc.Stdin.Close() // a dut reads no commands from the rig
	p.mu.Lock()
	p.proc = proc
	p.starts++
	done := make(chan struct{})
	p.copyDone = done
	w := io.Writer(p.out)
	if p.file != nil {
		w = io.MultiWriter(p.out, p.file)
		fmt.Fprintf(p.file, "--- start %d: %s\n", p.starts, proc.Where)
	}
	p.mu.Unlock()
	// The output is drained as it comes, or a chatty program blocks on
	// a full pipe; the copy ends when the program's stdout closes.
	go func() {
		defer close(done)
		_, _ = io.Copy(w, proc.Stdout)
	}()
	p.log.Info("dut started", "dut", p.DUT.Name, "board", p.Board.Name, "where", proc.Where)
	return nil
}

// Where says where the program runs ("netns hlr… pid 123"), "external"
// for an external dut.
func (p *Program) Where() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return "external"
	}
	return p.proc.Where
}

// Exited reports whether the started program has ended (crashed, killed
// or exited); false for an external dut.
func (p *Program) Exited() bool {
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	if proc == nil {
		return false
	}
	select {
	case <-proc.Done():
		return true
	default:
		return false
	}
}

// Done is closed when the current process ends; nil (never) for an
// external dut.
func (p *Program) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	return p.proc.Done()
}

// Kill SIGKILLs the program's process group, as a crash would. The
// program stays dead until Restart.
func (p *Program) Kill() error {
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("%w: dut %s is external: the rig did not start it", ErrExternal, p.DUT.Name)
	}
	return proc.Kill()
}

// Restart starts the program again after it ended (a crash during a
// soak), counting the restart; a program still running is killed first.
// Blocks for the start.
func (p *Program) Restart(ctx context.Context) error {
	p.mu.Lock()
	proc, stopped := p.proc, p.stopped
	p.mu.Unlock()
	switch {
	case proc == nil:
		return fmt.Errorf("%w: dut %s is external: the rig cannot restart it", ErrExternal, p.DUT.Name)
	case stopped:
		return fmt.Errorf("%w: dut %s", ErrStopped, p.DUT.Name)
	}
	_ = proc.Kill()
	if err := proc.Wait(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	p.log.Warn("dut restarted", "dut", p.DUT.Name, "ended", proc.Where)
	return p.start(ctx)
}

// Restarts is how many times the program was started again.
func (p *Program) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.starts-1, 0)
}

// Output is the tail of what the program wrote: the last 64 KiB of its
// standard output (across restarts) and of its current process's
// standard error.
func (p *Program) Output() string {
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	s := p.out.String()
	if proc != nil {
		if e := proc.Stderr(); e != "" {
			s += "--- stderr:\n" + e
		}
	}
	if p.bridge != nil {
		s += "--- bridge:\n" + p.bridgeOut.String() + p.bridge.Stderr()
	}
	return s
}

// Usage is the current process's CPU time (user + system) and resident
// set, read from /proc on the controller's host: local and netns boards
// share it. An external dut has no process the rig knows (ErrExternal).
func (p *Program) Usage() (cpu time.Duration, rssBytes int64, err error) {
	p.mu.Lock()
	proc := p.proc
	p.mu.Unlock()
	if proc == nil {
		return 0, 0, fmt.Errorf("%w: dut %s", ErrExternal, p.DUT.Name)
	}
	cpu, rss, err := procstat.Usage(proc.PID)
	if err != nil {
		return 0, 0, fmt.Errorf("dut %s usage (%s): %w", p.DUT.Name, proc.Where, err)
	}
	return cpu, rss, nil
}

// OutputTail is the last n lines of Output.
func (p *Program) OutputTail(n int) string { return lastLines(p.Output(), n) }

// Stop kills the program and releases its log. Idempotent; safe after a
// crash; a no-op for an external dut.
func (p *Program) Stop() error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	proc, done := p.proc, p.copyDone
	p.mu.Unlock()
	if proc == nil {
		return nil
	}
	err := proc.Kill()
	<-proc.Done()
	<-done
	if p.bridge != nil {
		if berr := p.bridge.Kill(); err == nil {
			err = berr
		}
		<-p.bridge.Done()
	}
	if p.bridgeDir != "" {
		os.RemoveAll(p.bridgeDir)
	}
	if p.file != nil {
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
