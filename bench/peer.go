package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/netns"
)

// ChildEnv is set in the environment of every process the bench re-executes
// (the pong or sink end). A test binary that wants to serve as the child
// checks it in TestMain and calls [Main] with its arguments.
const ChildEnv = "HILRIG_BENCH_CHILD"

// Launcher says how to start the other end of a benchmark: Exe with Args
// followed by the hidden sub-mode arguments ("pong", <spec>). The zero value
// means os.Executable() with Args "bench" (the hilrig binary).
type Launcher struct {
	Exe  string
	Args []string
}

func (l Launcher) command(ctx context.Context, ns *netns.NS, extra ...string) (*exec.Cmd, error) {
	exe, args := l.Exe, l.Args
	if exe == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable to re-exec: %w", err)
		}
		exe, args = p, []string{"bench"}
	}
	all := append(append([]string{}, args...), extra...)
	if ns != nil {
		return ns.Command(ctx, exe, all...), nil
	}
	return exec.CommandContext(ctx, exe, all...), nil
}

// childSpec is everything the other end needs, passed as one JSON argument.
type childSpec struct {
	Role       string    `json:"role"` // "pong" or "sink"
	Transport  string    `json:"transport"`
	Wait       kind.Wait `json:"wait,omitempty"` // omitted: futex
	Path       string    `json:"path,omitempty"`
	Size       int       `json:"size"`
	CPU        int       `json:"cpu"`
	Reliable   bool      `json:"reliable,omitempty"`
	Domain     string    `json:"domain,omitempty"`
	ShmDir     string    `json:"shm_dir,omitempty"`
	ChildIP    string    `json:"child_ip,omitempty"`
	ParentAddr string    `json:"parent_addr,omitempty"`
	Dgram      int       `json:"dgram,omitempty"`
	Depth      int       `json:"depth,omitempty"`     // contract history depth (0: the bench's 1)
	KeepLast   bool      `json:"keep_last,omitempty"` // udp reliable: keep-last history
	Dedicated  bool      `json:"dedicated,omitempty"` // udp: dedicated reader (UDPConfig.DedicatedReader)
	GSO        bool      `json:"gso,omitempty"`       // raw-udp: GSO runs and UDP_GRO reads (udpMsg)
	KeyFile    string    `json:"key_file,omitempty"`  // udp: domain key file (NodeOptions.UDPKeyFile)
}

// readyMsg is the child's first stdout line.
type readyMsg struct {
	Ready bool   `json:"ready"`
	Addr  string `json:"addr,omitempty"`
	Err   string `json:"err,omitempty"`
}

// doneMsg is the child's last stdout line, after its stdin closed.
type doneMsg struct {
	Count   uint64 `json:"count"`
	Bytes   uint64 `json:"bytes"`
	Lost    uint64 `json:"lost"`
	FirstNs int64  `json:"first_ns"` // CLOCK_MONOTONIC of the first message
	LastNs  int64  `json:"last_ns"`  // CLOCK_MONOTONIC of the last message
	UserNs  int64  `json:"user_ns"`  // CPU time while serving
	SysNs   int64  `json:"sys_ns"`
	Err     string `json:"err,omitempty"`
}

// peer is a running child process. Its stdin is the stop signal (closing
// it asks the child to finish; the child also exits when the parent dies
// because the pipe then closes), its stdout carries readyMsg and doneMsg.
type peer struct {
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan []byte
	exited chan struct{}
	err    error // from Wait, valid after exited
	stderr *tailBuffer
	once   sync.Once
}

// startPeer starts the child. onExit runs (once) when it exits for any
// reason, so the timed loop can stop instead of waiting for a dead peer.
func startPeer(ctx context.Context, l Launcher, ns *netns.NS, spec childSpec, files []*os.File, onExit func()) (*peer, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd, err := l.command(ctx, ns, spec.Role, string(js))
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &peer{cmd: cmd, stdin: inW, lines: make(chan []byte, 4), exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start %s end: %w", spec.Role, err)
	}
	inR.Close()
	outW.Close()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		outR.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
		if onExit != nil {
			onExit()
		}
	}()
	return p, nil
}

// read decodes the next stdout line into v, waiting up to timeout.
func (p *peer) read(v any, timeout time.Duration, what string) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			return fmt.Errorf("%w: exited before %s (%v)%s", ErrPeer, what, p.err, p.stderr.suffix())
		}
		if err := json.Unmarshal(line, v); err != nil {
			return fmt.Errorf("%w: bad %s line %q: %v%s", ErrPeer, what, line, err, p.stderr.suffix())
		}
		return nil
	case <-t.C:
		return fmt.Errorf("%w: no %s within %v%s", ErrPeer, what, timeout, p.stderr.suffix())
	}
}

func (p *peer) ready(timeout time.Duration) (readyMsg, error) {
	var r readyMsg
	if err := p.read(&r, timeout, "ready message"); err != nil {
		return r, err
	}
	if !r.Ready || r.Err != "" {
		return r, fmt.Errorf("%w: %s%s", ErrPeer, r.Err, p.stderr.suffix())
	}
	return r, nil
}

// finish asks the child to stop, collects its doneMsg and reaps it.
func (p *peer) finish(timeout time.Duration) (doneMsg, error) {
	var d doneMsg
	p.stdin.Close()
	err := p.read(&d, timeout, "final report")
	if err == nil && d.Err != "" {
		err = fmt.Errorf("%w: %s%s", ErrPeer, d.Err, p.stderr.suffix())
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
		err = errors.Join(err, fmt.Errorf("%w: did not exit within %v, killed", ErrPeer, timeout))
	}
	return d, err
}

// kill kills and reaps the child. Idempotent, safe on every exit path.
func (p *peer) kill() {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// tailBuffer keeps the last max bytes written (the child's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; its stderr: " + s
}

var _ io.Writer = (*tailBuffer)(nil)
