package rig

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig/power"
	"github.com/hilrig/hilrig/vmboard"
)

// vmState is what the rig keeps for its vm boards: the board image of
// each architecture, built (or found in the cache) once per rig.
type vmState struct {
	mu  sync.Mutex
	img map[vmboard.Arch]*vmboard.Image
	// running is each vm board's QEMU process while it runs (its power,
	// for the vm power driver); guarded by mu.
	running map[string]*vmProc
	// console is each vm board's console capture input (Options.ConsoleDir
	// and a console: {device: vm} block); guarded by mu.
	console map[string]io.Writer
}

// vmProc is a running vm board's QEMU process: power.VM.
type vmProc struct {
	*vmboard.Board
	exited chan struct{}
}

// WaitExit blocks until QEMU has been reaped or ctx ends.
func (p *vmProc) WaitExit(ctx context.Context) error {
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ power.VM = (*vmProc)(nil)

// vmRunning is board's running QEMU process (nil when none runs).
func (r *Rig) vmRunning(board string) *vmProc {
	r.vm.mu.Lock()
	defer r.vm.mu.Unlock()
	p := r.vm.running[board]
	if p == nil {
		return nil
	}
	select {
	case <-p.exited:
		return nil
	default:
		return p
	}
}

// vmLife bounds a VM board's life when nothing stops it earlier; the rig's
// Close (or Agent.Kill) always does, so this only guards a leaked rig.
const vmLife = 7 * 24 * time.Hour

// vmImage returns the board image for arch, building it on first use.
// Blocks for the build (minutes when nothing is cached, about a second
// otherwise).
func (r *Rig) vmImage(ctx context.Context, arch vmboard.Arch) (*vmboard.Image, error) {
	r.vm.mu.Lock()
	defer r.vm.mu.Unlock()
	if img := r.vm.img[arch]; img != nil {
		return img, nil
	}
	img, err := vmboard.Build(ctx, vmboard.BuildOptions{Arch: arch, Logger: r.opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("%w: %s vm board image: %w", ErrNotAvailable, arch, err)
	}
	r.opts.Logger.Info("vm board image", "arch", arch, "hash", img.Hash, "cached", img.Cached, "elapsed", img.Elapsed)
	if r.vm.img == nil {
		r.vm.img = map[vmboard.Arch]*vmboard.Image{}
	}
	r.vm.img[arch] = img
	return img, nil
}

// vmBinary is the agent binary for a VM board of arch: a static linux
// hilrig for that CPU. The controller's own build serves when the
// controller is linux on that CPU (deploy.Build links with CGO_ENABLED=0;
// vmboard refuses a dynamic binary, or one for another CPU, with a
// message saying so), else one is cross-compiled (and checked by
// deploy.Build to be for arch).
func (r *Rig) vmBinary(ctx context.Context, arch vmboard.Arch) (string, error) {
	if runtime.GOOS == "linux" && runtime.GOARCH == string(arch) {
		return r.localBinary(ctx)
	}
	bo := r.opts.Build
	bo.GOOS, bo.GOARCH = "linux", string(arch)
	return deploy.Build(ctx, bo)
}

// VMSegmentGroup is the QEMU multicast group ("239.255.X.Y:port", joined
// on loopback only) of a VM segment in this rig: derived from the rig's
// domain, so two rigs (parallel test processes) never share a segment,
// and the same for every board of the segment.
func (r *Rig) VMSegmentGroup(segment string) string {
	h := fnv.New64a()
	h.Write([]byte(r.Domain))
	h.Write([]byte{0})
	h.Write([]byte(segment))
	s := h.Sum64()
	// 239.255.0.0/16 is the organisation-local scope; ports 40000..59999
	// stay clear of the rig's loopback flow ports below 52000 only by
	// address (a different group), which is what multicast binds to.
	return net.JoinHostPort(fmt.Sprintf("239.255.%d.%d", byte(s>>8), byte(s)), fmt.Sprint(40000+(s>>16)%20000))
}

// startVMAgent boots the vm board b with `hilrig agent` as the program
// on its virtio-serial channel and returns the agent's Process: stdin and
// stdout are that channel, Stderr is the tail of the board's serial
// console (the agent's stderr, kernel messages and /init's markers), Kill
// stops QEMU, and the Process exits when QEMU has been reaped. Blocks
// until QEMU runs (boot continues; newAgent waits for the hello). ctx
// bounds the start only.
func (r *Rig) startVMAgent(ctx context.Context, b *fixtures.Board, args []string) (*deploy.Process, error) {
	vm := b.VM.Defaults()
	arch := vmboard.Arch(vm.Arch)
	img, err := r.vmImage(ctx, arch)
	if err != nil {
		return nil, fmt.Errorf("rig: board %s: %w", b.Name, err)
	}
	bin, err := r.vmBinary(ctx, arch)
	if err != nil {
		return nil, fmt.Errorf("rig: board %s: agent binary: %w", b.Name, err)
	}
	accel := vmboard.DetectAccelFor(arch)
	r.vm.mu.Lock()
	capture := r.vm.console[b.Name]
	r.vm.mu.Unlock()
	var board *vmboard.Board
	var killed atomic.Bool
	proc, console, exited := deploy.Attach(fmt.Sprintf("vm %s (qemu, %s)", b.Name, accel.Accel), func() error {
		killed.Store(true)
		board.Kill()
		return nil
	})
	if capture != nil {
		console = io.MultiWriter(console, capture)
	}
	// The board outlives this call: its life is bounded by Kill (the
	// rig's Close) and vmLife, not by ctx; ctx only cancels a start that
	// is still connecting.
	life, cancel := context.WithCancel(context.Background())
	stopOnCtx := context.AfterFunc(ctx, cancel)
	board, err = vmboard.Start(life, img, vmboard.RunOptions{
		Tests: []vmboard.Test{{Name: "agent", Binary: bin, Args: args, Stdio: true}},
		Net:   &vmboard.NetOptions{Group: r.VMSegmentGroup(vm.Segment), IP: vm.IP},
		// Memory was validated as whole MiB.
		MemoryMiB: int(vm.Memory >> 20),
		CPUs:      vm.CPUs,
		Lines:     vm.GPIOLines,
		Hostname:  b.Name,
		Console:   console,
		Accel:     &accel,
		Timeout:   vmLife,
		Logger:    r.opts.Logger.With("board", b.Name),
	})
	if !stopOnCtx() {
		// ctx ended during the start: the board (if any) is being
		// cancelled; let Wait reap it.
		if err == nil {
			_, _ = board.Wait()
			err = ctx.Err()
		}
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("rig: board %s: %w", b.Name, err)
	}
	conn := board.Stdio().(net.Conn)
	proc.Stdin, proc.Stdout = halfCloser{conn}, conn
	vp := &vmProc{Board: board, exited: make(chan struct{})}
	// Published, so `hilrig power` in another process drives this QEMU.
	unpublish, perr := power.Publish(r.Rack.Name, b.Name, power.Published{Socket: board.QMPSocket(), PID: board.PID(),
		RigPID: os.Getpid(), Since: time.Now()})
	if perr != nil {
		r.opts.Logger.Warn("vm board not published for hilrig power", "board", b.Name, "err", perr)
		unpublish = func() {}
	}
	r.vm.mu.Lock()
	if r.vm.running == nil {
		r.vm.running = map[string]*vmProc{}
	}
	r.vm.running[b.Name] = vp
	r.vm.mu.Unlock()
	go func() {
		// Wait follows the console for the board's whole life (the
		// console must be drained or the guest stalls on it) and always
		// kills and reaps QEMU.
		_, werr := board.Wait()
		cancel()
		if errors.Is(werr, vmboard.ErrBoardTimeout) && killed.Load() {
			werr = nil // stopped by the rig, as intended
		}
		unpublish()
		close(vp.exited)
		exited(werr)
	}()
	return proc, nil
}

// halfCloser makes Close of the agent's stdin a half-close of the
// virtio-serial socket: the agent reads EOF (and stops) while its last
// messages (final, bye) can still be read.
type halfCloser struct{ c net.Conn }

func (h halfCloser) Write(p []byte) (int, error) { return h.c.Write(p) }

func (h halfCloser) Close() error {
	if cw, ok := h.c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return h.c.Close()
}

// VMPID is the process id of vm board board's running QEMU (0 when none
// runs): what a test freezes to hang the board.
func (r *Rig) VMPID(board string) int {
	if p := r.vmRunning(board); p != nil {
		return p.PID()
	}
	return 0
}

// VMSysRq sends the Magic SysRq key to vm board board's kernel over its
// serial console (a BREAK, then key: [vmboard.Board.SysRq]), as a lab
// engineer would on its terminal: 'c' panics the board, which its
// console capture shows. It fails, naming the board, when no QEMU runs
// for it. Blocks until QEMU has the bytes or ctx ends.
func (r *Rig) VMSysRq(ctx context.Context, board string, key byte) error {
	p := r.vmRunning(board)
	if p == nil {
		return fmt.Errorf("rig: board %s: sysrq %q: no QEMU runs for it: %w", board, key, vmboard.ErrNotRunning)
	}
	if err := p.SysRq(ctx, key); err != nil {
		return fmt.Errorf("rig: board %s: %w", board, err)
	}
	return nil
}
