package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy"
	"github.com/hilrig/hilrig/fixtures"
)

// Agent is a running `hilrig agent` on one board. Safe for concurrent use.
type Agent struct {
	// Board is the rack board it runs on.
	Board *fixtures.Board
	// Hello is what the agent said about itself.
	Hello agentproto.Hello

	proc *deploy.Process
	ssh  *deploy.SSHClient
	enc  *agentproto.Encoder

	// maxWindows bounds each endpoint's buffered windows (Options.MaxWindows).
	maxWindows int

	mu sync.Mutex
	// eps holds the endpoints still running: an endpoint is released when
	// its final (or failure) arrives, so a long run with churn keeps only
	// live endpoints here.
	eps      map[string]*Endpoint
	errs     []agentproto.Error // errors not tied to an endpoint, the last maxAgentErrors
	errsLost int                // older errors dropped from errs
	dead     error              // set when the agent's output ended
	bye      chan struct{}
	readEnd  chan struct{}
	stopped  bool
	killed   bool // by Kill: the rig replaces it on the next Agent call
	// probes are the running PTP probes by id (ptpprobe.go).
	probes map[string]*PTPProbe
	// shm is the rig's record of its peers' Fast DDS segments (peershm.go).
	shm *peerShm
	// remoteBin is the agent binary's path on an SSH board; remoteShm the
	// Fast DDS segments its agent listed, removed over SSH after it ended.
	remoteBin string
	remoteShm []string // guarded by mu
	// log gets the warning when stop kills an agent that said no bye;
	// nil discards (agents made by hand in tests).
	log *slog.Logger
}

// maxAgentErrors bounds the agent-level errors kept for diagnostics.
const maxAgentErrors = 64

func newAgent(ctx context.Context, b *fixtures.Board, proc *deploy.Process, sshc *deploy.SSHClient, timeout time.Duration, maxWindows int) (*Agent, error) {
	a := &Agent{Board: b, proc: proc, ssh: sshc, enc: agentproto.NewEncoder(proc.Stdin), maxWindows: maxWindows,
		eps: map[string]*Endpoint{}, bye: make(chan struct{}), readEnd: make(chan struct{})}
	dec := agentproto.NewDecoder(proc.Stdout)
	// The first line is read in another goroutine so the timer bounds it;
	// the goroutine ends when the caller kills the process (its stdout
	// closes). It sends the line's text with a refusal, copied: the
	// decoder's buffer is reused.
	type first struct {
		m    *agentproto.Msg
		err  error
		line string
	}
	hello := make(chan first, 1)
	go func() {
		m, err := dec.Next()
		hello <- first{m: m, err: err, line: quoteLine(dec.Last())}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case f := <-hello:
		switch {
		case errors.Is(f.err, io.EOF) || errors.Is(f.err, io.ErrUnexpectedEOF):
			// The agent ended before saying anything: its exit status and
			// stderr say why. Its pipes are closed, so it has exited or is
			// about to: wait for that (its stderr is then complete), bounded by
			// the start's timer.
			select {
			case <-proc.Done():
			case <-t.C:
			case <-ctx.Done():
			}
			return nil, fmt.Errorf("%w: board %s (%s): no hello: the agent's output ended; stderr: %s", ErrAgent, b.Name, proc.Where, strings.TrimSpace(proc.Stderr()))
		case f.err != nil:
			// A line that is not a hello this controller speaks (another
			// protocol version, a banner printed before the agent): the
			// agent is still running and waiting for our hello, so do not
			// wait for it to end; the caller kills it.
			return nil, fmt.Errorf("%w: board %s (%s): no hello: first line %s: %w; stderr: %s", ErrAgent, b.Name, proc.Where, f.line, f.err, strings.TrimSpace(proc.Stderr()))
		case f.m.Kind != agentproto.KindHello:
			return nil, fmt.Errorf("%w: board %s (%s): first message is %s, want hello: first line %s", ErrAgent, b.Name, proc.Where, f.m.Kind, f.line)
		}
		a.Hello = *f.m.Hello
	case <-t.C:
		return nil, fmt.Errorf("%w: board %s (%s): no hello within %v; stderr: %s", ErrTimeout, b.Name, proc.Where, timeout, strings.TrimSpace(proc.Stderr()))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := a.enc.Encode(agentproto.NewHello(agentproto.Hello{Agent: "hilrig controller"})); err != nil {
		return nil, fmt.Errorf("%w: board %s: %w", ErrAgent, b.Name, err)
	}
	go a.read(dec)
	return a, nil
}

// maxQuotedLine bounds the part of a refused first line quoted in an error.
const maxQuotedLine = 200

// quoteLine quotes a line a peer sent for an error message, cut to
// maxQuotedLine bytes.
func quoteLine(b []byte) string {
	if len(b) > maxQuotedLine {
		return fmt.Sprintf("%q… (%d bytes)", b[:maxQuotedLine], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// read dispatches the agent's messages until its output ends.
func (a *Agent) read(dec *agentproto.Decoder) {
	defer close(a.readEnd)
	for {
		m, err := dec.Next()
		if err != nil {
			var pe *agentproto.Error
			if errors.As(err, &pe) {
				a.mu.Lock()
				a.addErr(*pe)
				a.mu.Unlock()
				continue
			}
			a.mu.Lock()
			if errors.Is(err, io.EOF) {
				err = errors.New("agent output ended")
			}
			a.dead = fmt.Errorf("%w: board %s (%s): %w; stderr: %s", ErrAgent, a.Board.Name, a.proc.Where, err, strings.TrimSpace(a.proc.Stderr()))
			for _, ep := range a.eps {
				ep.fail(ep.onPeer(a.dead))
			}
			a.mu.Unlock()
			return
		}
		a.mu.Lock()
		switch m.Kind {
		case agentproto.KindStarted:
			if ep := a.eps[m.Started.Endpoint]; ep != nil {
				ep.ack = *m.Started
				ep.started(nil)
			}
		case agentproto.KindWindow:
			if ep := a.eps[m.Window.Endpoint]; ep != nil {
				ep.window(*m.Window)
			}
		case agentproto.KindFinal:
			if ep := a.eps[m.Final.Endpoint]; ep != nil {
				ep.finish(m.Final)
				// Released: the caller holds the *Endpoint; the agent no
				// longer needs it (a lingering publisher can still be
				// stopped by id).
				delete(a.eps, m.Final.Endpoint)
			}
		case agentproto.KindError:
			e := *m.Error
			if ep := a.eps[e.Endpoint]; ep != nil {
				ep.fail(ep.onPeer(fmt.Errorf("%w: board %s: %w", ErrAgent, a.Board.Name, &e)))
				delete(a.eps, e.Endpoint)
			} else {
				a.addErr(e)
			}
		case agentproto.KindPTPSample:
			a.ptpSample(m.PTPSample)
		case agentproto.KindBye:
			select {
			case <-a.bye:
			default:
				close(a.bye)
			}
		}
		a.mu.Unlock()
	}
}

// addErr keeps e among the last maxAgentErrors agent-level errors.
// Called with a.mu held.
func (a *Agent) addErr(e agentproto.Error) {
	if len(a.errs) >= maxAgentErrors {
		copy(a.errs, a.errs[1:])
		a.errs = a.errs[:len(a.errs)-1]
		a.errsLost++
	}
	a.errs = append(a.errs, e)
}

// Errors returns the errors the agent reported that concern no running
// endpoint (the last 64; [Agent.ErrorsDropped] counts older ones). Safe
// for concurrent use.
func (a *Agent) Errors() []agentproto.Error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agentproto.Error(nil), a.errs...)
}

// ErrorsDropped counts agent-level errors no longer kept by Errors.
func (a *Agent) ErrorsDropped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.errsLost
}

// Endpoints is how many endpoints the controller still tracks on this
// agent: started and without a final or failure yet. Finished endpoints
// are released, so this stays small in a long run with restarts.
func (a *Agent) Endpoints() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.eps)
}

// Stderr returns the tail of the agent's standard error (the last 64 KiB:
// a bounded ring, so a chatty agent cannot grow the controller), for
// failure diagnostics. For SSH boards it is the remote command's stderr.
// Safe for concurrent use; does not block.
func (a *Agent) Stderr() string { return a.proc.Stderr() }

// PID is the agent's process id on this machine (local and netns boards;
// 0 for SSH boards).
func (a *Agent) PID() int { return a.proc.PID }

// Where says where the agent runs ("netns hlr123n4 pid 77").
func (a *Agent) Where() string { return a.proc.Where }

// Start starts an endpoint and waits until the agent acknowledges it
// (a subscriber is then attached) or reports why it could not. Blocks.
func (a *Agent) Start(ctx context.Context, s agentproto.Start) (*Endpoint, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ep := newEndpoint(a, s)
	a.mu.Lock()
	if a.dead != nil || a.stopped {
		err := a.dead
		a.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("%w: agent on %s stopped", ErrClosed, a.Board.Name)
		}
		return nil, err
	}
	if _, dup := a.eps[s.Endpoint]; dup {
		a.mu.Unlock()
		return nil, fmt.Errorf("%w: board %s: endpoint %q already started", ErrAgent, a.Board.Name, s.Endpoint)
	}
	a.eps[s.Endpoint] = ep
	a.mu.Unlock()
	if err := a.enc.Encode(agentproto.NewStart(s)); err != nil {
		return nil, fmt.Errorf("%w: board %s: %w", ErrAgent, a.Board.Name, err)
	}
	select {
	case <-ep.startedCh:
		if ep.startErr != nil {
			return nil, ep.startErr
		}
		if err := a.recordPeerShm(ep.ack.PeerShm); err != nil {
			// The endpoint runs; only the clean-up after a kill would
			// miss its files, so say so instead of failing the start.
			a.mu.Lock()
			a.addErr(agentproto.Error{Message: "record Fast DDS shared memory for clean-up: " + err.Error()})
			a.mu.Unlock()
		}
		return ep, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop asks the agent to stop everything and waits for its bye (bounded by
// ctx), then kills its process group (or SSH session) regardless and
// waits for it to exit. Idempotent.
func (a *Agent) stop(ctx context.Context) error {
	a.mu.Lock()
	already := a.stopped
	a.stopped = true
	a.mu.Unlock()
	if !already {
		_ = a.enc.Encode(agentproto.NewStop(""))
	}
	select {
	case <-a.bye:
	case <-a.readEnd:
	case <-ctx.Done():
		// No bye in time: it is killed below, its peers unclosed. Said
		// aloud, as an agent that never finishes its stop (an iceoryx
		// close waiting on RouDi was one) is otherwise invisible.
		if a.log != nil {
			a.log.Warn("agent said no bye in time; killing it, its endpoints and peers unclosed",
				"board", a.Board.Name, "where", a.proc.Where, "err", ctx.Err())
		}
		a.recordHeldShm()
	}
	_ = a.proc.Stdin.Close()
	err := a.proc.Kill()
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if werr := a.proc.Wait(wctx); errors.Is(werr, context.DeadlineExceeded) {
		err = errors.Join(err, fmt.Errorf("%w: %s did not exit after SIGKILL", ErrTimeout, a.proc.Where))
	}
	if c, ok := a.proc.Stdout.(io.Closer); ok {
		_ = c.Close()
	}
	if a.ssh != nil {
		err = errors.Join(err, a.cleanRemoteShm())
		_ = a.ssh.Close()
	}
	return err
}

// Endpoint is one endpoint running on an agent. Safe for concurrent use.
type Endpoint struct {
	// Spec is what was started.
	Spec  agentproto.Start
	agent *Agent

	startOnce sync.Once
	startedCh chan struct{}
	startErr  error
	// ack is the agent's started message (middleware, a peer's
	// description and discovery time); written before startedCh closes.
	ack agentproto.Started

	mu sync.Mutex
	// windows are the buffered windows not yet taken, oldest first, at
	// most maxWindows (older ones are dropped and counted).
	windows    []agentproto.Window
	maxWindows int
	received   uint64 // windows received in total
	dropped    uint64 // windows dropped from the buffer, never returned
	final      *agentproto.Final
	err        error
	doneCh     chan struct{}
}

func newEndpoint(a *Agent, s agentproto.Start) *Endpoint {
	mw := a.maxWindows
	if mw <= 0 {
		mw = DefaultMaxWindows
	}
	return &Endpoint{Spec: s, agent: a, maxWindows: mw, startedCh: make(chan struct{}), doneCh: make(chan struct{})}
}

// called with agent.mu held
// Started is the agent's acknowledgement: the middleware the endpoint
// runs on and, for a peer, its version/configuration/transport line and
// discovery time. Zero until the endpoint started.
func (e *Endpoint) Started() agentproto.Started {
	select {
	case <-e.startedCh:
		return e.ack
	default:
		return agentproto.Started{}
	}
}

func (e *Endpoint) started(err error) {
	e.startOnce.Do(func() { e.startErr = err; close(e.startedCh) })
}

func (e *Endpoint) window(w agentproto.Window) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.received++
	if len(e.windows) >= e.maxWindows {
		// Drop the oldest; clear its slot so its histogram is freed now,
		// not when append next reallocates the backing array.
		e.windows[0] = agentproto.Window{}
		e.windows = e.windows[1:]
		e.dropped++
	}
	e.windows = append(e.windows, w)
}

func (e *Endpoint) finish(f *agentproto.Final) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.final == nil && e.err == nil {
		e.final = f
		close(e.doneCh)
	}
}

// onPeer names e's peer middleware in err, an agent failure that already
// names the board: an endpoint of a peer (docs/peers.md) fails as the
// peer's as much as the board's ("peer cyclonedds, endpoint flow3-sub0:
// rig: agent failed: board board-c …"). Errors of hilrig's own endpoints
// are returned unchanged.
func (e *Endpoint) onPeer(err error) error {
	if mw := e.Spec.Middleware; agentproto.IsPeer(mw) {
		return fmt.Errorf("peer %s, endpoint %s: %w", mw, e.Spec.Endpoint, err)
	}
	return err
}

func (e *Endpoint) fail(err error) {
	e.started(err)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.final == nil && e.err == nil {
		e.err = err
		close(e.doneCh)
	}
}

// Windows returns the buffered window summaries, oldest first, without
// taking them: every window received so far for a short flow, but at
// most Options.MaxWindows (default [DefaultMaxWindows]) of the most
// recent ones — older windows are dropped ([Endpoint.DroppedWindows]
// counts them) so an endpoint nobody drains holds bounded memory.
// Windows already returned by [Endpoint.TakeWindows] are not included.
// Safe for concurrent use.
func (e *Endpoint) Windows() []agentproto.Window {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agentproto.Window(nil), e.windows...)
}

// TakeWindows returns the buffered windows (oldest first) and empties
// the buffer: the caller owns them and the endpoint keeps no reference,
// so a consumer that calls it at least every MaxWindows windows (the
// soak runner does, every checkpoint) sees every window and the
// controller's memory stays constant however long the endpoint runs.
// Returns nil when nothing arrived. Safe for concurrent use; does not
// block.
func (e *Endpoint) TakeWindows() []agentproto.Window {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.windows
	e.windows = nil
	return out
}

// WindowCount is how many windows arrived for the endpoint in total
// (taken, buffered or dropped). Safe for concurrent use.
func (e *Endpoint) WindowCount() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received
}

// DroppedWindows counts windows dropped from a full buffer before
// anyone took them. Non-zero means a consumer missed windows: drain with
// TakeWindows more often or raise Options.MaxWindows. Safe for
// concurrent use.
func (e *Endpoint) DroppedWindows() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}

// Done is closed when the endpoint's final (or failure) has arrived.
func (e *Endpoint) Done() <-chan struct{} { return e.doneCh }

// Wait blocks until the endpoint's final summary arrives, it fails, or ctx
// is done.
func (e *Endpoint) Wait(ctx context.Context) (*agentproto.Final, error) {
	select {
	case <-e.doneCh:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.final, e.err
}

// Stop asks the agent to stop this endpoint (its final follows).
func (e *Endpoint) Stop() error {
	if err := e.agent.enc.Encode(agentproto.NewStop(e.Spec.Endpoint)); err != nil {
		return fmt.Errorf("%w: board %s: %w", ErrAgent, e.agent.Board.Name, err)
	}
	return nil
}

// Kill SIGKILLs the agent (its process group; for an SSH board, the
// remote session) without asking it to stop: its endpoints fail with
// ErrAgent and release nothing — shared-memory segments stay behind as
// after a crash (Rig.Close removes those of the rig's domain). Waits
// until the process exited and its output ended (bounded by ctx). The
// rig forgets a killed agent: [Rig.RestartAgent] or the next
// [Rig.Agent] for its board starts a fresh one. Idempotent.
func (a *Agent) Kill(ctx context.Context) error {
	a.mu.Lock()
	a.stopped, a.killed = true, true
	a.mu.Unlock()
	a.recordHeldShm()
	err := a.proc.Kill()
	if werr := a.proc.Wait(ctx); errors.Is(werr, context.DeadlineExceeded) || errors.Is(werr, context.Canceled) {
		return errors.Join(err, fmt.Errorf("%w: %s did not exit after SIGKILL: %w", ErrTimeout, a.proc.Where, werr))
	}
	_ = a.proc.Stdin.Close()
	if c, ok := a.proc.Stdout.(io.Closer); ok {
		_ = c.Close()
	}
	select {
	case <-a.readEnd:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: output did not end after SIGKILL: %w", ErrTimeout, a.proc.Where, ctx.Err())
	}
	var cerr error
	if a.ssh != nil {
		cerr = a.cleanRemoteShm()
		_ = a.ssh.Close()
	}
	return cerr
}

func (a *Agent) wasKilled() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.killed
}

// Dead returns why the agent's output ended (nil while it runs).
func (a *Agent) Dead() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dead
}

// Board is the name of the board the endpoint runs on.
func (e *Endpoint) Board() string { return e.agent.Board.Name }
