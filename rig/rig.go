// Package rig is the controller API the suites use: open a rack fixture
// (creating the network namespaces, veth links and simulated GPIO chips it
// asks for), start `hilrig agent` on named boards (local process, `ip netns
// exec`, or SSH with a cross-compiled, uploaded, sha256-verified binary),
// wire a publisher on one board to subscribers on others, collect their
// window and final summaries into report cases, and tear everything down —
// idempotently, even after a failed or timed-out spec: agents are asked to
// stop, then their process groups are killed, leftover shared-memory
// segments of the rig's domain removed, namespaces and sim chips deleted.
//
// Typical use in a spec:
//
//	r, err := rig.Open(ctx, rack, nil)
//	Expect(err).NotTo(HaveOccurred())
//	DeferCleanup(r.Close)
//	f, err := r.Flow(ctx, rig.FlowSpec{Traffic: rig.Traffic{Link: "a-b-shm", Payload: 64, Count: 10000}})
//	res, err := f.Wait(ctx)
//	c := res.Case("latency", "shm 64B")
package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/rig/console"
	"github.com/hilrig/hilrig/rig/lease"
)

// Options configures Open. nil means defaults.
type Options struct {
	// Binary is the hilrig binary for local and netns boards. Default:
	// deploy.Build for this machine (cached by content hash).
	Binary string
	// Build configures cross-compiling for SSH boards (and Binary's default).
	Build deploy.BuildOptions
	// Domain is the middleware domain every endpoint of this rig uses;
	// default a unique "rig<pid>-<n>", so rigs never see each other's
	// segments and Close can remove exactly its own.
	Domain string
	// StartTimeout bounds an agent's start (hello), from its process's
	// start. Default 30 s. A first line that is not a hello of this
	// protocol version (a banner, another version) ends the start at once
	// with an error naming the board and quoting the line.
	StartTimeout time.Duration
	// StopTimeout bounds the graceful part of Close per agent before its
	// process group is killed. Default 5 s.
	StopTimeout time.Duration
	// SSHDial, if set, opens SSH connections for board (tests dial from
	// inside a namespace). Default: direct TCP.
	SSHDial func(ctx context.Context, board, network, addr string) (net.Conn, error)
	// Logger receives progress and teardown diagnostics. Default: discard.
	Logger *slog.Logger
	// MaxWindows bounds the window summaries each endpoint buffers until
	// they are taken ([Endpoint.TakeWindows]); older ones are dropped and
	// counted. A window with latency carries an HDR histogram (about
	// 200 KiB decoded), so the bound is the controller's memory per
	// endpoint. Default [DefaultMaxWindows].
	MaxWindows int
	// Lease, if set, is taken for the rack before anything is set up and
	// released by Close, so two controllers never drive one rack: Open
	// fails with the holder named (lease.ErrHeld). HostLeases is the
	// controller-host lock; report/store/postgres.RackLeases the lab-wide
	// one (a PostgreSQL session advisory lock); Leases takes several. The
	// suites set it (suites/internal/harness). nil: no lease (the embedded
	// sim rack, whose rigs are private per domain, and parallel test
	// processes).
	Lease RackLocker
	// ConsoleDir, if set, is where Open starts capturing the serial
	// console of every board with a console: block (console-<board>.log,
	// see package console); Rig.Console returns the capture. vm consoles
	// are not captured here yet.
	ConsoleDir string
}

// RackLocker grants rack leases (Options.Lease).
type RackLocker interface {
	// Lock takes rack's lease for this process, or fails naming the
	// holder. Blocks at most until ctx ends. The returned func releases it.
	Lock(ctx context.Context, rack string) (release func() error, err error)
}

// HostLeases is the RackLocker of the controller host (lease.Dir).
type HostLeases struct {
	Dir    *lease.Dir
	Holder string // who: user or CI job; default $USER
	// Group, if set, lets every process of one test run share the lease
	// (lease.Info.Group): the suites use the run ID.
	Group string
	// Wait is how long Lock waits for a held lease to be released before
	// it fails naming the holder (polling every 250 ms); 0: no wait.
	Wait time.Duration
	// OnTakeover, if set, hears about a stale lease (dead holder) replaced.
	OnTakeover func(stale lease.Info)
}

// Lock acquires the rack's lease in h.Dir (default lease.DefaultDir),
// waiting up to h.Wait (and at most until ctx ends) while another holder
// has it.
func (h HostLeases) Lock(ctx context.Context, rack string) (func() error, error) {
	d := h.Dir
	if d == nil {
		d = lease.DefaultDir()
	}
	who := lease.Self(rack, h.Holder)
	if who.Holder == "" {
		who.Holder = os.Getenv("USER")
	}
	who.Group = h.Group
	var l *lease.Lease
	err := lease.WaitHeld(ctx, h.Wait, func() (err error) {
		l, err = d.Acquire(ctx, who)
		return err
	})
	if err != nil {
		return nil, err
	}
	if l.TookOver != nil && h.OnTakeover != nil {
		h.OnTakeover(*l.TookOver)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return l.Release(ctx)
	}, nil
}

// Leases is a RackLocker that takes every lease of the list in order
// (the host lease, then the lab-wide one) and releases them in reverse.
// Lock fails if any fails, releasing those it took.
type Leases []RackLocker

// Lock takes every lease of ls for rack.
func (ls Leases) Lock(ctx context.Context, rack string) (func() error, error) {
	var held []func() error
	release := func() error {
		var errs []error
		for i := len(held) - 1; i >= 0; i-- {
			errs = append(errs, held[i]())
		}
		return errors.Join(errs...)
	}
	for _, l := range ls {
		r, err := l.Lock(ctx, rack)
		if err != nil {
			return nil, errors.Join(err, release())
		}
		held = append(held, r)
	}
	return release, nil
}

// DefaultMaxWindows is the default Options.MaxWindows: 256 windows, four
// minutes of 1 s windows, about 50 MiB per subscriber in the worst case.
// Short flows keep every window; long runs drain with TakeWindows.
const DefaultMaxWindows = 256

var rigSeq atomic.Uint32

// Rig is an opened rack. Safe for concurrent use.
type Rig struct {
	// Rack is the fixture the rig was opened with.
	Rack *fixtures.Rack
	// Domain is the middleware domain of every endpoint started by the rig.
	Domain string

	opts Options

	mu        sync.Mutex
	closed    bool
	closeOnce sync.Once
	closeErr  error
	ns        map[string]*netns.NS // logical name → namespace
	pairs     []*netns.Pair
	linkAddrs map[string][2]netip.Addr
	agents    map[string]*Agent
	peerShm   peerShm // Fast DDS segments of the peer agents, removed by Close
	chips     []*gpiosim.Chip
	closers   []func() error // scope simulator and its sources, closed in reverse
	// simChips maps a rack's "sim:NAME" chip to the chip the rig made,
	// "sim:NAME.<domain>": sim chips are machine-wide, so two rigs of the
	// same rack (parallel test processes) must not share one.
	simChips  map[kind.Chip]kind.Chip
	vm        vmState // vm boards: the board image (vm.go)
	scopeAddr string
	flowSeq   atomic.Uint32
	portSeq   atomic.Uint32
	// releaseLease gives back Options.Lease's lease (Close, last).
	releaseLease func() error
	// consoles are the running captures by board (Options.ConsoleDir).
	consoles map[string]*console.Capture
}

// Open prepares rack for use: it creates the rack's namespaces (joined by
// veth pairs for veth links) and simulated GPIO chips. Agents start lazily
// ([Rig.Agent]). On error everything made so far is removed. The caller
// must Close the rig (DeferCleanup(r.Close)). Blocks for the ip(8) calls.
func Open(ctx context.Context, rack *fixtures.Rack, opts *Options) (*Rig, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 5 * time.Second
	}
	if o.MaxWindows <= 0 {
		o.MaxWindows = DefaultMaxWindows
	}
	if o.Domain == "" {
		o.Domain = fmt.Sprintf("rig%d-%d", os.Getpid(), rigSeq.Add(1))
	}
	if err := rack.Validate(); err != nil {
		return nil, err
	}
	r := &Rig{Rack: rack, Domain: o.Domain, opts: o, ns: map[string]*netns.NS{},
		linkAddrs: map[string][2]netip.Addr{}, agents: map[string]*Agent{}}
	if o.Lease != nil {
		release, err := o.Lease.Lock(ctx, rack.Name)
		if err != nil {
			return nil, fmt.Errorf("rig: rack %s: %w", rack.Name, err)
		}
		r.releaseLease = release
	}
	if err := r.setup(ctx); err != nil {
		_ = r.Close()
		return nil, err
	}
	if err := r.startConsoles(); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// startConsoles captures the serial consoles (Options.ConsoleDir).
func (r *Rig) startConsoles() error {
	if r.opts.ConsoleDir == "" {
		return nil
	}
	r.consoles = map[string]*console.Capture{}
	for i := range r.Rack.Boards {
		b := &r.Rack.Boards[i]
		if b.Console == nil {
			continue
		}
		path := filepath.Join(r.opts.ConsoleDir, "console-"+b.Name+".log")
		if b.Console.Device == fixtures.ConsoleVM {
			// The QEMU serial console: every boot of the board writes
			// into the same capture (startVMAgent tees it here).
			pr, pw := io.Pipe()
			c, err := console.Start(b.Name, pr, console.Options{Path: path, MaxBytes: int64(b.Console.MaxBytes)})
			if err != nil {
				pw.Close()
				return fmt.Errorf("rig: %w", err)
			}
			r.consoles[b.Name] = c
			r.vm.mu.Lock()
			if r.vm.console == nil {
				r.vm.console = map[string]io.Writer{}
			}
			r.vm.console[b.Name] = lossyWriter{pw}
			r.vm.mu.Unlock()
			continue
		}
		c, err := console.Open(b.Name, *b.Console, path)
		if err != nil {
			return fmt.Errorf("rig: %w", err)
		}
		r.consoles[b.Name] = c
	}
	return nil
}

// lossyWriter never fails a write: a closed capture must not stop the
// board whose console it read.
type lossyWriter struct{ w io.Writer }

func (l lossyWriter) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}

// ConsoleReport is, for every board with a captured console, its flagged
// lines (panic, oops, watchdog, OOM; at most 10) and its last n lines:
// what a failing case carries ("" without captures). Safe for concurrent
// use.
func (r *Rig) ConsoleReport(n int) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.consoles)) {
		c := r.consoles[name]
		flags := c.Flags()
		tail := c.Tail(n)
		if len(flags) == 0 && len(tail) == 0 {
			continue
		}
		fmt.Fprintf(&b, "console %s (%s):\n", name, c.Path())
		if len(flags) > 0 {
			b.WriteString("  flagged:\n")
			for _, l := range flags[max(len(flags)-10, 0):] {
				b.WriteString("    " + l.String() + "\n")
			}
		}
		fmt.Fprintf(&b, "  last %d lines:\n", len(tail))
		for _, l := range tail {
			b.WriteString("    " + l.String() + "\n")
		}
	}
	return b.String()
}

// Console is board's console capture (nil, false without one: no
// console: block, a vm console, or no Options.ConsoleDir). Safe for
// concurrent use.
func (r *Rig) Console(board string) (*console.Capture, bool) {
	c, ok := r.consoles[board]
	return c, ok
}

func (r *Rig) setup(ctx context.Context) error {
	rack := r.Rack
	if len(rack.Namespaces) > 0 {
		if err := netns.Available(); err != nil {
			return fmt.Errorf("%w: rack %s declares namespaces: %w", ErrNotAvailable, rack.Name, err)
		}
	}
	nsOf := func(board string) string {
		b, _ := rack.Board(board)
		return b.Reach.Netns
	}
	for _, l := range rack.Links {
		if !l.Veth {
			continue
		}
		an, bn := nsOf(l.A), nsOf(l.B)
		if r.ns[an] != nil || r.ns[bn] != nil {
			return fmt.Errorf("%w: link %s: namespace %s or %s already joined by another veth link (one veth per namespace pair is supported)", ErrNotAvailable, l.Name, an, bn)
		}
		p, err := netns.NewPair(ctx, &netns.PairOptions{MTU: l.MTU})
		if err != nil {
			return fmt.Errorf("rig: link %s: %w", l.Name, err)
		}
		r.pairs = append(r.pairs, p)
		r.ns[an], r.ns[bn] = p.A, p.B
		r.linkAddrs[l.Name] = [2]netip.Addr{p.AAddr, p.BAddr}
		r.opts.Logger.Info("veth link", "link", l.Name, l.A, p.AAddr, l.B, p.BAddr)
	}
	for _, n := range rack.Namespaces {
		if r.ns[n.Name] != nil {
			continue
		}
		ns, err := netns.New(ctx)
		if err != nil {
			return fmt.Errorf("rig: namespace %s: %w", n.Name, err)
		}
		r.ns[n.Name] = ns
	}
	for _, l := range rack.Links {
		if l.Veth || l.Transport != "udp" {
			continue
		}
		a, errA := netip.ParseAddr(l.AAddr)
		b, errB := netip.ParseAddr(l.BAddr)
		if errA != nil || errB != nil {
			return fmt.Errorf("rig: link %s: addresses %q, %q", l.Name, l.AAddr, l.BAddr)
		}
		r.linkAddrs[l.Name] = [2]netip.Addr{a, b}
	}
	// Simulated GPIO chips: one per "sim:NAME", sized for the highest offset.
	lines := map[string]int{}
	rackLines := rack.DUTLines() // the devices under test's lines too
	for _, b := range rack.Boards {
		rackLines = append(append(rackLines, b.Markers...), b.Captures...)
	}
	for _, l := range rackLines {
		name, ok := l.Chip.Sim()
		if !ok {
			continue
		}
		n := 1
		if l.Offset != nil {
			n = *l.Offset + 1
		}
		lines[name] = max(lines[name], n, 8)
	}
	r.simChips = map[kind.Chip]kind.Chip{}
	if len(lines) > 0 {
		reapChipsOnce.Do(func() {
			// What a killed rig left (its Close never ran): by label, so
			// chips made by hand or by tests are never touched.
			gone, err := gpiosim.RemoveStale("", rigChipLabel)
			if len(gone) > 0 || err != nil {
				r.opts.Logger.Warn("removed sim GPIO chips of rigs that are gone", "chips", gone, "err", err)
			}
		})
	}
	for name, n := range lines {
		real := name + "." + r.Domain
		c, err := gpiosim.Create(real, gpiosim.Config{Lines: n, Label: rigChipLabel + r.Domain})
		if err != nil {
			return fmt.Errorf("rig: sim GPIO chip %s (as %s): %w", name, real, err)
		}
		r.chips = append(r.chips, c)
		r.simChips[kind.SimChip(name)] = kind.SimChip(real)
	}
	return r.startScopeSim(ctx)
}

// rigChipLabel starts the label of every sim chip a rig makes (the
// domain follows), so the chips of a rig that is gone can be told apart.
const rigChipLabel = "hilrig-rig-"

// reapChipsOnce: a process removes stale rig chips once, at its first
// rig with sim chips.
var reapChipsOnce sync.Once

// Chip returns the chip agents use for a rack chip name: the rig's own
// instance for a "sim:NAME" chip, the name itself otherwise.
func (r *Rig) Chip(rackChip kind.Chip) kind.Chip {
	if c, ok := r.simChips[rackChip]; ok {
		return c
	}
	return rackChip
}

// LineSpec is the gpio.LineSpec of a rack line, its chip mapped by Chip
// (a simulated chip's run-unique name).
func (r *Rig) LineSpec(l fixtures.Line) gpio.LineSpec {
	return gpio.LineSpec{Chip: r.Chip(l.Chip), Line: l.Ref(), ActiveLow: l.ActiveLow}
}

// NetnsName returns the real name of the rack namespace logical.
func (r *Rig) NetnsName(logical string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns, ok := r.ns[logical]
	if !ok {
		return "", false
	}
	return ns.Name, true
}

// LinkAddrs returns the A and B addresses of a udp link (assigned by the
// rig for veth links).
func (r *Rig) LinkAddrs(link string) (a, b netip.Addr, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ad, ok := r.linkAddrs[link]
	if !ok {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: rack %s has no udp link %q", fixtures.ErrNotFound, r.Rack.Name, link)
	}
	return ad[0], ad[1], nil
}

// Agent returns the agent on board, starting it on first use (deploying
// the binary to SSH boards). Blocks until the agent said hello.
func (r *Rig) Agent(ctx context.Context, board string) (*Agent, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if a := r.agents[board]; a != nil {
		if !a.wasKilled() {
			r.mu.Unlock()
			return a, nil // a crashed agent stays: its errors are the diagnosis
		}
		delete(r.agents, board) // killed by Kill: start a fresh one
	}
	r.mu.Unlock()
	b, err := r.Rack.Board(board)
	if err != nil {
		return nil, err
	}
	a, err := r.startAgent(ctx, b)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = a.stop(context.Background())
		return nil, ErrClosed
	}
	if prev := r.agents[board]; prev != nil { // lost a race: keep the first
		go a.stop(context.Background())
		return prev, nil
	}
	r.agents[board] = a
	return a, nil
}

// RestartAgent SIGKILLs the agent on board (when one runs: [Agent.Kill])
// and starts a fresh one, which it returns. Fault specs use it to crash a
// board's endpoints and bring the board back; endpoints are then
// restarted with [Rig.RestartEndpoint]. Blocks until the new agent said
// hello.
func (r *Rig) RestartAgent(ctx context.Context, board string) (*Agent, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	old := r.agents[board]
	delete(r.agents, board)
	r.mu.Unlock()
	if old != nil {
		if err := old.Kill(ctx); err != nil {
			return nil, fmt.Errorf("rig: restart agent on %s: %w", board, err)
		}
	}
	return r.Agent(ctx, board)
}

// RestartEndpoint starts ep's spec again, under the id newID, on the
// agent currently running on ep's board (a fresh one after
// [Rig.RestartAgent]). A still-running ep is stopped first and its final
// awaited (bounded by ctx). A publisher starts over at sequence 1 in a
// new middleware epoch, as a restarted process would. Blocks until the
// new endpoint is acknowledged.
func (r *Rig) RestartEndpoint(ctx context.Context, ep *Endpoint, newID string) (*Endpoint, error) {
	select {
	case <-ep.Done():
	default:
		if err := ep.Stop(); err != nil {
			return nil, err
		}
		if _, err := ep.Wait(ctx); err != nil && !errors.Is(err, ErrAgent) {
			return nil, fmt.Errorf("rig: restart endpoint %s: %w", ep.Spec.Endpoint, err)
		}
	}
	a, err := r.Agent(ctx, ep.Board())
	if err != nil {
		return nil, err
	}
	s := ep.Spec
	s.Endpoint = newID
	return a.Start(ctx, s)
}

// Agents returns the agents started so far (a killed one until its board
// is asked for again), by board name: what a failure diagnosis lists.
func (r *Rig) Agents() []*Agent {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := slices.Sorted(maps.Keys(r.agents))
	out := make([]*Agent, 0, len(names))
	for _, n := range names {
		out = append(out, r.agents[n])
	}
	return out
}

// Binary returns the hilrig binary the local, netns and vm agents run
// (Options.Binary, else built once for the controller's platform). Blocks
// for the build.
func (r *Rig) Binary(ctx context.Context) (string, error) { return r.localBinary(ctx) }

// Build builds hilrig for the controller's platform (static, CGO-free),
// as a rig does for its agents when Options.Binary is empty; callers that
// open several rigs build once and pass the path. Blocks.
func Build(ctx context.Context) (string, error) {
	bin, err := deploy.Build(ctx, deploy.BuildOptions{})
	if err != nil {
		return "", fmt.Errorf("rig: build hilrig for the agents: %w", err)
	}
	return bin, nil
}

func (r *Rig) localBinary(ctx context.Context) (string, error) {
	r.mu.Lock()
	bin := r.opts.Binary
	r.mu.Unlock()
	if bin != "" {
		return bin, nil
	}
	bo := r.opts.Build
	bo.GOOS, bo.GOARCH = "", ""
	bin, err := deploy.Build(ctx, bo)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.opts.Binary = bin
	r.mu.Unlock()
	return bin, nil
}

func (r *Rig) startAgent(ctx context.Context, b *fixtures.Board) (*Agent, error) {
	re := b.Reach
	var err error
	args := []string{"agent", "-board", b.Name}
	var proc *deploy.Process
	var sshc *deploy.SSHClient
	var remoteBin string // the agent binary on an SSH board
	switch re.Kind {
	case fixtures.ReachLocal, fixtures.ReachNetns:
		bin, err := r.localBinary(ctx)
		if err != nil {
			return nil, err
		}
		if re.Kind == fixtures.ReachLocal {
			proc, err = deploy.StartLocal(ctx, bin, args...)
		} else {
			name := re.Netns
			if ns, ok := r.NetnsName(re.Netns); ok {
				name = ns // rig-made; otherwise an existing namespace of that name
			}
			proc, err = deploy.StartNetns(ctx, name, bin, args...)
		}
		if err != nil {
			return nil, err
		}
	case fixtures.ReachVM:
		if proc, err = r.startVMAgent(ctx, b, args); err != nil {
			return nil, err
		}
	case fixtures.ReachSSH:
		cfg := deploy.SSHConfig{User: re.User, Addr: re.Addr(), KeyFile: r.Rack.RelPath(b.SSH.KeyFile), KnownHosts: r.Rack.RelPath(b.SSH.KnownHosts)}
		if d := r.opts.SSHDial; d != nil {
			name := b.Name
			cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) { return d(ctx, name, network, addr) }
		}
		sshc, err = deploy.DialSSH(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("rig: board %s: %w", b.Name, err)
		}
		proc, remoteBin, err = sshc.StartAgent(ctx, deploy.AgentBuild{GOOS: b.GOOS, GOARCH: b.GOARCH, Local: r.localBinary,
			Build: r.opts.Build, RemoteDir: b.SSH.RemoteDir}, args...)
		if err != nil {
			sshc.Close()
			return nil, fmt.Errorf("rig: board %s: %w", b.Name, err)
		}
	}
	a, err := newAgent(ctx, b, proc, sshc, r.opts.StartTimeout, r.opts.MaxWindows)
	if err != nil {
		_ = proc.Kill()
		if sshc != nil {
			sshc.Close()
		}
		return nil, err
	}
	a.shm, a.remoteBin, a.log = &r.peerShm, remoteBin, r.opts.Logger
	if want := boardGOARCH(b); a.Hello.GOARCH != want {
		// The binary shipped is not the one built for the board (its
		// hello says which CPU it runs on): refuse it rather than measure
		// the wrong build.
		_ = proc.Kill()
		if sshc != nil {
			sshc.Close()
		}
		return nil, fmt.Errorf("%w: board %s: the agent (%s) runs as GOARCH %q, the rack says the board is %s", ErrAgent, b.Name, a.Hello.Agent, a.Hello.GOARCH, want)
	}
	r.opts.Logger.Info("agent up", "board", b.Name, "where", proc.Where, "build", a.Hello.Agent)
	return a, nil
}

// boardGOARCH is the CPU the rack says board b has: a vm board's vm.arch,
// else its goarch, else the controller's own.
func boardGOARCH(b *fixtures.Board) string {
	switch {
	case b.VM != nil:
		return b.VM.Defaults().Arch
	case b.GOARCH != "":
		return b.GOARCH
	}
	return runtime.GOARCH
}

// Close tears everything down: every agent is asked to stop (bounded by
// StopTimeout), then its process group or SSH session is killed; shared-
// memory segments of the rig's domain, sim GPIO chips and namespaces are
// removed. Idempotent and safe to call from DeferCleanup after a failed or
// timed-out spec; the first call's error is returned by every call.
func (r *Rig) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		agents := make([]*Agent, 0, len(r.agents))
		for _, a := range r.agents {
			agents = append(agents, a)
		}
		r.mu.Unlock()
		var errs []error
		var wg sync.WaitGroup
		var emu sync.Mutex
		for _, a := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), r.opts.StopTimeout)
				defer cancel()
				if err := a.stop(ctx); err != nil {
					emu.Lock()
					errs = append(errs, fmt.Errorf("board %s: %w", a.Board.Name, err))
					emu.Unlock()
				}
			}()
		}
		wg.Wait()
		errs = append(errs, r.removeSegments(), r.peerShm.clean())
		for i := len(r.closers) - 1; i >= 0; i-- {
			errs = append(errs, r.closers[i]())
		}
		for _, c := range r.chips {
			errs = append(errs, c.Remove()) // Remove also closes our handle
		}
		for _, p := range r.pairs {
			errs = append(errs, p.Close())
		}
		for _, ns := range r.ns {
			errs = append(errs, ns.Close()) // pair members: idempotent
		}
		for _, c := range r.consoles {
			errs = append(errs, c.Close())
		}
		if r.releaseLease != nil {
			// Last: the rack is free only once nothing of this rig is left.
			errs = append(errs, r.releaseLease())
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// removeSegments removes shared-memory segments of the rig's domain that
// survived their agents (killed publishers cannot unlink).
func (r *Rig) removeSegments() error {
	const dir = "/dev/shm" // agents use the middleware default
	segs, err := middleware.ListSegments(dir)
	if err != nil {
		return fmt.Errorf("rig: list segments: %w", err)
	}
	var errs []error
	for _, s := range segs {
		if s.Domain != r.Domain {
			continue
		}
		if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("rig: remove segment %s: %w", filepath.Base(s.Path), err))
		}
	}
	return errors.Join(errs...)
}

func (r *Rig) nextPort() int {
	// Ports per rig process: 20000 + 64×(pid mod 500) + n keeps concurrent
	// test processes apart on loopback.
	return 20000 + 64*(os.Getpid()%500) + int(r.portSeq.Add(1)%64)
}
