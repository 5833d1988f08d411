// Package agent is the runtime behind `hilrig agent`: it reads
// agentproto messages on stdin, runs middleware publishers and subscribers
// with GPIO markers and clock stamps, streams window summaries and final
// summaries on stdout, and stops cleanly on request, on stdin EOF (the
// controller went away) or on a signal — closing every node (no shared-
// memory segment left behind) and releasing every GPIO line first.
package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/hostinfo"
)

// PeerOpener opens a peer's participant (runtime) for board on net.
type PeerOpener func(board string, net agentproto.PeerNet) (Peer, error)

// Marker marks one message on a GPIO line. Mark is called on the hot path
// (no allocation); Close releases the line. *gpio.Output implements it.
type Marker interface {
	Mark() error
	Close() error
}

var _ Marker = (*gpio.Output)(nil)

// Options configures Run. nil means defaults.
type Options struct {
	// Board is the board name reported in hello.
	Board string
	// Build is the agent build reported in hello ("hilrig v1 abc123").
	Build string
	// OpenMarker opens a marker line; default gpio.Open (real chips and
	// "sim:" chips).
	OpenMarker func(ctx context.Context, m agentproto.Marker) (Marker, error)
	// ShmDir overrides the middleware's shared-memory directory (tests).
	ShmDir string
	// Logger receives diagnostics (stderr in `hilrig agent`). Default: discard.
	Logger *slog.Logger
	// Peers opens the peer middlewares this agent can run endpoints on,
	// by name (Start.Middleware), for the board name and the network
	// (Start.PeerNet; zero: loopback). Empty in the hilrig binary;
	// cmd/hilrig-peer registers the cgo adapters.
	Peers map[string]PeerOpener
	// EnvPaths are the /proc and /sys roots the hello's environment
	// (governor, isolcpus, nohz_full, NIC IRQ affinity) is read from;
	// zero: the real ones. Tests point them at a fake tree.
	EnvPaths hostinfo.EnvPaths
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.OpenMarker == nil {
		r.OpenMarker = openGPIOMarker
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.EnvPaths.Proc == "" {
		r.EnvPaths.Proc = "/proc"
	}
	if r.EnvPaths.Sys == "" {
		r.EnvPaths.Sys = "/sys"
	}
	if r.Build == "" {
		r.Build = "hilrig (unknown build)"
	}
	return r
}

func openGPIOMarker(ctx context.Context, m agentproto.Marker) (Marker, error) {
	mode := gpio.Mode{Kind: gpio.Toggle, Every: m.Every}
	if m.Mode == agentproto.MarkerPulse {
		mode.Kind, mode.Width = gpio.Pulse, time.Duration(m.PulseWidthNs)
	}
	return gpio.Open(ctx, gpio.LineSpec{Chip: m.Chip, Line: m.Line, ActiveLow: m.ActiveLow, Consumer: "hilrig-agent"}, mode)
}

// Main is `hilrig agent [-board NAME]`: it parses args and runs the agent
// on stdin/stdout until the controller stops it or goes away. Diagnostics
// go to stderr.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, build string) error {
	return MainWith(ctx, args, stdin, stdout, stderr, Options{Build: build})
}

// MainWith is Main with base options (the peer agent's registered Peers);
// the flags set Board and Logger.
func MainWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, base Options) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	board := fs.String("board", "", "board name reported to the controller")
	verbose := fs.Bool("v", false, "log diagnostics to stderr")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	lvl := slog.LevelWarn
	if *verbose {
		lvl = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	base.Board, base.Logger = *board, log
	return Run(ctx, stdin, stdout, &base)
}

// Run speaks the protocol on in/out until a stop-all message, EOF on in, or
// ctx is done; it then stops every endpoint, waits for their finals, sends
// bye and returns. It returns nil after a clean stop; ErrOutput if out
// broke. Malformed input is answered with error messages, never fatal.
// Blocks.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts *Options) error {
	o := opts.withDefaults()
	a := &agent{opts: o, enc: agentproto.NewEncoder(out), eps: map[string]*endpoint{}, ended: make(chan *endpoint)}
	host, _ := os.Hostname()
	// Small file reads of /proc and /sys, once per agent, before any
	// endpoint runs: they cost no measured message anything.
	env := hostinfo.CollectEnvFrom(o.EnvPaths)
	if err := a.enc.Encode(agentproto.NewHello(agentproto.Hello{
		Agent: o.Build, Board: o.Board, Hostname: host, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		PID: os.Getpid(), NumCPU: runtime.NumCPU(), Kernel: sys.Kernel(),
		CPUModel: env.CPUModel, CPUGovernor: env.CPUGovernor, OnlineCPUs: env.OnlineCPUs, Tuning: env.Tuning,
	})); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}

	type input struct {
		msg *agentproto.Msg
		err error
	}
	inputs := make(chan input)
	readerDone := make(chan struct{})
	// The reader goroutine blocks in Read on stdin, which cannot be
	// interrupted; it ends when stdin is closed (always, when the process
	// exits). It never blocks on inputs after Run returns.
	go func() {
		dec := agentproto.NewDecoder(in)
		for {
			m, err := dec.Next()
			select {
			case inputs <- input{m, err}:
			case <-readerDone:
				return
			}
			if err != nil && !errors.As(err, new(*agentproto.Error)) {
				return
			}
		}
	}()
	defer close(readerDone)

	for {
		select {
		case <-ctx.Done():
			return a.shutdown("signal")
		case ep := <-a.ended:
			delete(a.eps, ep.id)
		case in := <-inputs:
			if in.err != nil {
				var pe *agentproto.Error
				if errors.As(in.err, &pe) {
					if err := a.enc.Encode(agentproto.NewError(pe.Code, "", pe)); err != nil {
						a.shutdown("output")
						return fmt.Errorf("%w: %w", ErrOutput, err)
					}
					continue
				}
				if !errors.Is(in.err, io.EOF) {
					o.Logger.Warn("reading stdin", "err", in.err)
				}
				return a.shutdown("eof")
			}
			if done, err := a.handle(ctx, in.msg); done || err != nil {
				if err != nil {
					a.shutdown("output")
					return err
				}
				return a.shutdown("stop")
			}
		}
	}
}

type agent struct {
	opts  Options
	enc   *agentproto.Encoder
	eps   map[string]*endpoint
	ended chan *endpoint
	wg    sync.WaitGroup
	// probes are the running PTP probes (ptpprobe.go), by id.
	probes map[string]*ptpProbe
	// peers are the opened peer middlewares (peer.go), by name.
	peersMu sync.Mutex
	peers   map[string]Peer
}

// handle processes one control message; done means "stop everything".
func (a *agent) handle(ctx context.Context, m *agentproto.Msg) (bool, error) {
	send := func(msg *agentproto.Msg) error {
		if err := a.enc.Encode(msg); err != nil {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
		return nil
	}
	switch m.Kind {
	case agentproto.KindHello:
		return false, nil // version already checked by Decode
	case agentproto.KindStart:
		s := *m.Start
		if _, dup := a.eps[s.Endpoint]; dup {
			return false, send(agentproto.NewError(agentproto.CodeDuplicateEndpoint, s.Endpoint,
				fmt.Errorf("endpoint %q is already running", s.Endpoint)))
		}
		ep := newEndpoint(a, s)
		a.eps[s.Endpoint] = ep
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			ep.run(ctx)
			a.ended <- ep
		}()
		return false, nil
	case agentproto.KindPTPProbe:
		return false, a.ptpProbeMsg(ctx, m.PTPProbe)
	case agentproto.KindStop:
		if m.Stop.Endpoint == "" {
			return true, nil
		}
		ep, ok := a.eps[m.Stop.Endpoint]
		if !ok {
			return false, send(agentproto.NewError(agentproto.CodeUnknownEndpoint, m.Stop.Endpoint,
				fmt.Errorf("no running endpoint %q", m.Stop.Endpoint)))
		}
		ep.cancel(errStopped)
		return false, nil
	default:
		return false, send(agentproto.NewError(agentproto.CodeUnexpected, "",
			fmt.Errorf("the agent does not accept %q messages", m.Kind)))
	}
}

// shutdown stops every endpoint, waits for them (each sends its final and
// releases its node and lines), then says bye.
func (a *agent) shutdown(reason string) error {
	a.stopPTPProbes()
	for _, ep := range a.eps {
		ep.cancel(errShutdown)
	}
	waited := make(chan struct{})
	go func() { a.wg.Wait(); close(waited) }()
drain:
	for {
		select {
		case ep := <-a.ended:
			delete(a.eps, ep.id)
		case <-waited:
			break drain
		}
	}
	a.closePeers()
	if err := a.enc.Encode(&agentproto.Msg{Kind: agentproto.KindBye, Bye: &agentproto.Bye{Reason: reason}}); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}
