package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/internal/cli"
)

func testSet(got *[]string) cli.Set {
	run := func(name string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(_ context.Context, args []string, _, _ io.Writer) error {
			*got = append([]string{name}, args...)
			return nil
		}
	}
	return cli.Set{Prog: "hilrig x", Commands: []cli.Command{
		{Name: "ls", Summary: "list things", Run: run("ls")},
		{Name: "clean", Summary: "remove stale things", Run: run("clean")},
	}}
}

func TestSetDispatchesWithRemainingArgs(t *testing.T) {
	var got []string
	if err := testSet(&got).Run(t.Context(), []string{"clean", "--dry-run", "a"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "clean --dry-run a" {
		t.Fatalf("ran %q, want clean with [--dry-run a]", got)
	}
}

func TestSetMistakesAreUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frob"}} {
		var got []string
		var stdout, stderr bytes.Buffer
		err := testSet(&got).Run(t.Context(), args, &stdout, &stderr)
		if !errors.Is(err, cli.ErrUsage) || cli.ExitCode(err) != 2 {
			t.Errorf("%q: err %v (exit %d), want ErrUsage (exit 2)", args, err, cli.ExitCode(err))
		}
		if got != nil {
			t.Errorf("%q: ran %q", args, got)
		}
		if !strings.Contains(err.Error(), "ls, clean") {
			t.Errorf("%q: error %q does not name the sub-commands", args, err)
		}
		if !strings.Contains(stderr.String(), "usage: hilrig x <command>") || !strings.Contains(stderr.String(), "remove stale things") || stdout.Len() != 0 {
			t.Errorf("%q: usage not on stderr: stdout %q stderr %q", args, stdout.String(), stderr.String())
		}
	}
}

func TestSetHelpGoesToStdout(t *testing.T) {
	var got []string
	var stdout, stderr bytes.Buffer
	s := testSet(&got)
	s.Usage = "usage: custom text\n"
	if err := s.Run(t.Context(), []string{"--help"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "usage: custom text\n" || stderr.Len() != 0 {
		t.Errorf("help: stdout %q stderr %q", stdout.String(), stderr.String())
	}
}

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{fmt.Errorf("gpio mark: %w: bad --rate", cli.ErrUsage), 2},
	} {
		if got := cli.ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
