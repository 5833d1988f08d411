//go:build unix

// Package faultkit holds the reusable pieces of the fault suite: helper
// processes that are SIGKILLed on purpose (a publisher, a subscriber, a
// soak checkpoint writer), re-executed from the suite's own test binary;
// the payload pattern that detects a torn message; a flood of malformed
// and forged UDP datagrams; and the `hilrig shm` runner.
//
// Helpers return errors; only specs assert. Every started process is in
// its own process group and is killed by Close.
package faultkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
)

// HelperEnv names the role a re-executed test binary runs; see
// RunHelperIfRequested.
const HelperEnv = "HILRIG_FAULT_HELPER"

// Sentinels.
var (
	// ErrHelper: a helper process failed, exited early or said something
	// unexpected.
	ErrHelper = errors.New("faultkit: helper")
	// ErrFault: the fault's outcome could not be established.
	ErrFault = errors.New("faultkit: fault")
)

// Helper is a running helper process. Lines it prints on stdout are
// delivered in order through Next/Expect. Safe for concurrent use.
type Helper struct {
	Role    string
	Cmd     *exec.Cmd
	Started time.Time

	lines  chan line
	stderr *testkit.SyncBuffer // the first 64 KiB
	done   chan struct{}
	err    error
	once   sync.Once
}

type line struct {
	text string
	at   time.Time
}

// StartHelper re-executes the running test binary as helper role with env
// ("K=V" pairs). The caller must Close it (DeferCleanup(h.Close)).
func StartHelper(role string, env ...string) (*Helper, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{HelperEnv + "=" + role}, env...)...)
	cmd.SysProcAttr = helperProcAttr()
	h := &Helper{Role: role, Cmd: cmd, lines: make(chan line, 1024), stderr: &testkit.SyncBuffer{Limit: 64 << 10}, done: make(chan struct{})}
	cmd.Stderr = h.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrHelper, role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrHelper, role, err)
	}
	h.Started = time.Now()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- line{sc.Text(), time.Now()}
		}
		close(h.lines)
		h.err = cmd.Wait()
		close(h.done)
	}()
	return h, nil
}

// PID is the helper's process id.
func (h *Helper) PID() int { return h.Cmd.Process.Pid }

// Next returns the next stdout line and when it was read. Blocks until a
// line arrives, the helper exits (an error with its stderr) or ctx ends.
func (h *Helper) Next(ctx context.Context) (string, time.Time, error) {
	select {
	case l, ok := <-h.lines:
		if !ok {
			<-h.done
			return "", time.Time{}, fmt.Errorf("%w: %s (pid %d) exited: %v; stderr: %s", ErrHelper, h.Role, h.PID(), h.err, strings.TrimSpace(h.stderr.String()))
		}
		return l.text, l.at, nil
	case <-ctx.Done():
		return "", time.Time{}, fmt.Errorf("%w: %s (pid %d): waiting for output: %w", ErrHelper, h.Role, h.PID(), ctx.Err())
	}
}

// Expect reads lines until one starts with prefix and returns it (and
// when it was read). Other lines are skipped.
func (h *Helper) Expect(ctx context.Context, prefix string) (string, time.Time, error) {
	for {
		s, at, err := h.Next(ctx)
		if err != nil {
			return "", at, fmt.Errorf("waiting for %q: %w", prefix, err)
		}
		if strings.HasPrefix(s, prefix) {
			return s, at, nil
		}
	}
}

// Kill SIGKILLs the helper and waits until it is reaped; it returns an
// error unless the process died of that SIGKILL (an earlier exit means
// the fault was not injected mid-run).
func (h *Helper) Kill(ctx context.Context) error {
	select {
	case <-h.done:
		return fmt.Errorf("%w: %s (pid %d) had already exited (%v) before the SIGKILL; stderr: %s", ErrHelper, h.Role, h.PID(), h.err, strings.TrimSpace(h.stderr.String()))
	default:
	}
	if err := syscall.Kill(h.PID(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("%w: kill %s: %w", ErrHelper, h.Role, err)
	}
	for range h.lines { // drain so the reader reaches Wait
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s (pid %d) not reaped after SIGKILL: %w", ErrHelper, h.Role, h.PID(), ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(h.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil
		}
	}
	return fmt.Errorf("%w: %s (pid %d) ended with %v, not by SIGKILL", ErrHelper, h.Role, h.PID(), h.err)
}

// Close kills the helper's process group (if still running) and reaps it.
// Idempotent; for DeferCleanup.
func (h *Helper) Close() error {
	h.once.Do(func() {
		_ = syscall.Kill(-h.PID(), syscall.SIGKILL)
		go func() {
			for range h.lines {
			}
		}()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
		}
	})
	return nil
}

// Stderr is what the helper wrote on stderr (first 64 KiB).
func (h *Helper) Stderr() string { return h.stderr.String() }

// RunHelperIfRequested runs the helper role named by $HILRIG_FAULT_HELPER
// and exits the process; without it, it returns at once. Call it from an
// init function of the suite's test package, so the re-executed binary
// never reaches Ginkgo.
func RunHelperIfRequested() {
	role := os.Getenv(HelperEnv)
	if role == "" {
		return
	}
	err := runRole(role, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faultkit helper %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// writeLine writes one line and fails loudly if stdout is gone.
func writeLine(w io.Writer, format string, args ...any) {
	if _, err := fmt.Fprintf(w, format+"\n", args...); err != nil {
		os.Exit(3)
	}
}
