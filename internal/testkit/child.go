package testkit

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// Child is a helper process a test drives line by line: a re-executed
// test binary standing in for another controller, host or user. Lines go
// to its stdin, its answers come from its stdout. Used from the test's
// goroutine only.
type Child struct {
	Cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// StartChild starts cmd with pipes to its stdin and stdout (stderr as the
// caller set it). Cleanup closes its stdin, kills it and waits for it.
func StartChild(t testing.TB, cmd *exec.Cmd) *Child {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{Cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { c.in.Close(); _ = c.Cmd.Process.Kill(); _ = c.Cmd.Wait() })
	return c
}

// Send writes line (and a newline) to the child's stdin.
func (c *Child) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// Line reads the child's next line, without surrounding space. Blocks
// until the child writes it or exits.
func (c *Child) Line(t testing.TB) string {
	t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return strings.TrimSpace(line)
}

// Ask sends line and returns the child's answer.
func (c *Child) Ask(t testing.TB, line string) string {
	t.Helper()
	c.Send(t, line)
	return c.Line(t)
}

// CloseInput closes the child's stdin (its end-of-input).
func (c *Child) CloseInput() error { return c.in.Close() }
