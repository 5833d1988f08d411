// Package cli is the one sub-command dispatcher and the one usage error of
// the hilrig binary and its command packages (gpiocli, ptpcli, reportcli,
// vmcli, scopecli, shmtool, bench, agent). Each package keeps its own flag
// parsing; this package only picks the sub-command, prints usage, and says
// which errors are the user's command line (exit status 2).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrUsage marks a command-line mistake (unknown sub-command, bad flag,
// missing argument). Every command package wraps it; ExitCode maps it to 2.
var ErrUsage = errors.New("usage")

// Command is one sub-command. Run gets the arguments after the command's
// name; it blocks as long as the command runs and honours ctx.
type Command struct {
	Name    string
	Summary string // one line for the generated usage
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Set is a program's sub-commands.
type Set struct {
	// Prog is the command line up to the sub-command ("hilrig gpio").
	Prog string
	// Usage is printed for help and mistakes; empty: generated from the
	// commands' summaries.
	Usage    string
	Commands []Command
}

// Run dispatches args[0] to its command with args[1:]. "-h", "-help",
// "--help" and "help" print the usage to stdout and return nil; no
// sub-command or an unknown one prints the usage to stderr and returns an
// error wrapping ErrUsage.
func (s Set) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		s.PrintUsage(stderr)
		return fmt.Errorf("%w: missing sub-command (want %s)", ErrUsage, s.names())
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		s.PrintUsage(stdout)
		return nil
	}
	for _, c := range s.Commands {
		if c.Name == args[0] {
			return c.Run(ctx, args[1:], stdout, stderr)
		}
	}
	s.PrintUsage(stderr)
	return fmt.Errorf("%w: unknown sub-command %q (want %s)", ErrUsage, args[0], s.names())
}

// PrintUsage writes the usage text to w.
func (s Set) PrintUsage(w io.Writer) {
	if s.Usage != "" {
		fmt.Fprintln(w, strings.TrimRight(s.Usage, "\n"))
		return
	}
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\n", s.Prog)
	width := 0
	for _, c := range s.Commands {
		width = max(width, len(c.Name))
	}
	for _, c := range s.Commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
}

func (s Set) names() string {
	n := make([]string, len(s.Commands))
	for i, c := range s.Commands {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}

// ExitCode is the process exit status for a command's error: 0 for nil, 2
// for a command-line mistake (ErrUsage), 1 otherwise.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}
