package power

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/procgroup"
)

// command runs the power block's argv lists (no shell).
type command struct{ cfg fixtures.Power }

// maxOutput is how much of a command's output (stdout and stderr, the
// end of it) is kept for error messages; the rest is read and dropped,
// so a command that prints gigabytes costs no memory.
const maxOutput = 4 << 10

// run runs argv as the leader of its own process group and returns its
// exit code. It returns within timeout (and ctx) plus the time the kernel
// takes to kill: at the deadline the whole group is SIGKILLed and the
// output pipe is closed on our side, so neither a child that ignores the
// deadline nor a background grandchild that keeps the output open (sh -c
// '(sleep 40 &)') holds it. The command counts as finished when its
// output is closed, not when the leader exits: a leader that exits while
// a process it started still holds the output has not finished, and at
// the deadline that is a time-out error, never exit code 0.
func run(ctx context.Context, argv []string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := strings.Join(argv, " ")
	// Our own pipe, not exec's copying goroutine: exec.Cmd.Wait would
	// wait for every holder of the pipe to close it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("%q: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = procgroup.Attr()
	err = cmd.Start()
	pw.Close() // the child has its copy
	if err != nil {
		pr.Close()
		return -1, fmt.Errorf("%q: %w", name, err)
	}
	out := &tailBuffer{max: maxOutput}
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(out, pr) // ends at EOF or when pr is closed below
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	timedOut := false
	select {
	case waitErr = <-exited:
		select {
		case <-outDone:
		case <-ctx.Done():
			// The leader exited but a member of its group still holds the
			// output (so the group id is still in use): kill them.
			timedOut = true
			_ = procgroup.Kill(cmd.Process.Pid)
		}
	case <-ctx.Done():
		timedOut = true
		_ = procgroup.Kill(cmd.Process.Pid)
		waitErr = <-exited
	}
	// Closing our end ends the copy even if a process that left the group
	// (setsid) still holds the other.
	pr.Close()
	<-outDone
	if timedOut {
		return -1, fmt.Errorf("%q: killed after %v: %w; output: %s", name, timeout, ctx.Err(), out.String())
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return ee.ExitCode(), fmt.Errorf("%q exited %d: %s", name, ee.ExitCode(), out.String())
	}
	if waitErr != nil {
		return -1, fmt.Errorf("%q: %w", name, waitErr)
	}
	return 0, nil
}

// tailBuffer keeps the last max bytes written to it (at most 2*max held).
// Not safe for concurrent use: run reads it after the copy into it ended.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		t.dropped += int64(len(p) - t.max)
		p = p[len(p)-t.max:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		cut := len(t.buf) - t.max
		t.dropped += int64(cut)
		t.buf = append(t.buf[:0], t.buf[cut:]...)
	}
	return n, nil
}

// String is the end of the output for an error message: its last 512
// bytes, trimmed, with "…" when more came before.
func (t *tailBuffer) String() string {
	s := strings.TrimSpace(string(t.buf))
	if len(s) > 512 || t.dropped > 0 {
		if len(s) > 512 {
			s = s[len(s)-512:]
		}
		s = "…" + s
	}
	return s
}

func (c *command) set(ctx context.Context, on bool) error {
	argv := c.cfg.Off
	if on {
		argv = c.cfg.On
	}
	_, err := run(ctx, argv, c.cfg.Timeout)
	return err
}

func (c *command) cycle(ctx context.Context) error {
	if len(c.cfg.Cycle) == 0 {
		if err := c.set(ctx, false); err != nil {
			return err
		}
		if err := sleepCtx(ctx, c.cfg.OffTime); err != nil {
			return err
		}
		return c.set(ctx, true)
	}
	_, err := run(ctx, c.cfg.Cycle, c.cfg.Timeout)
	return err
}

// status: exit 0 is on, 1 is off, anything else (a time-out included) an
// error.
func (c *command) status(ctx context.Context) (State, error) {
	if len(c.cfg.Status) == 0 {
		return Unknown, nil
	}
	code, err := run(ctx, c.cfg.Status, c.cfg.Timeout)
	switch code {
	case 0:
		return On, nil
	case 1:
		return Off, nil
	}
	return Unknown, err
}

func (c *command) close() error { return nil }
