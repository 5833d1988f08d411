package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/hilrig/hilrig/fixtures"
)

// command runs the power block's argv lists (no shell).
type command struct{ cfg fixtures.Power }

func run(ctx context.Context, argv []string) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return ee.ExitCode(), fmt.Errorf("%q exited %d: %s", strings.Join(argv, " "), ee.ExitCode(), tail(out.String()))
	}
	if err != nil {
		return -1, fmt.Errorf("%q: %w", strings.Join(argv, " "), errors.Join(err, ctx.Err()))
	}
	return 0, nil
}

// tail is the last 512 bytes of a command's output, for error messages.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		s = "…" + s[len(s)-512:]
	}
	return s
}

func (c *command) set(ctx context.Context, on bool) error {
	argv := c.cfg.Off
	if on {
		argv = c.cfg.On
	}
	_, err := run(ctx, argv)
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
	_, err := run(ctx, c.cfg.Cycle)
	return err
}

// status: exit 0 is on, 1 is off, anything else an error.
func (c *command) status(ctx context.Context) (State, error) {
	if len(c.cfg.Status) == 0 {
		return Unknown, nil
	}
	code, err := run(ctx, c.cfg.Status)
	switch code {
	case 0:
		return On, nil
	case 1:
		return Off, nil
	}
	return Unknown, err
}

func (c *command) close() error { return nil }
