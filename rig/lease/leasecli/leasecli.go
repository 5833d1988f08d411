// Package leasecli is "hilrig rack": status, lease and release of a rack
// lease on the controller host (package lease).
package leasecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/rig/lease"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig rack status|lease|release [flags] [RACK]

  status    who holds RACK's lease (and whether the holder is gone)
  lease     take RACK's lease for the calling shell (-pid: another process);
            it lasts until released or that process exits (then stale)
  release   give it back (-force: break another holder's lease)

RACK defaults to the rack named by ginkgo.config (-config, $HILRIG_CONFIG,
or found walking up from the current directory).`

// Run runs "hilrig rack" with args (without "rack"). Blocks at most for the
// lease's guard lock (bounded by ctx and 10 s).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && args[0] == keepCmd {
		return keep(ctx)
	}
	sub := func(name string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return run(ctx, name, args, stdout, stderr)
		}
	}
	return cli.Set{Prog: "hilrig rack", Usage: usage, Commands: []cli.Command{
		{Name: "status", Summary: "who holds the lease", Run: sub("status")},
		{Name: "lease", Summary: "take the lease", Run: sub("lease")},
		{Name: "release", Summary: "give it back", Run: sub("release")},
	}}.Run(ctx, args, stdout, stderr)
}

func run(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hilrig rack "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", lease.DefaultDir().Path, "lease directory on the controller host ($HILRIG_LEASE_DIR)")
	config := fs.String("config", "", "ginkgo.config naming the rack (when RACK is not given)")
	holder := fs.String("holder", os.Getenv("USER"), "holder name recorded in the lease")
	pid := fs.Int("pid", os.Getppid(), "process the lease belongs to (default: the calling shell)")
	force := fs.Bool("force", false, "release: break a lease that is not yours")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: one RACK at most, got %q", ErrUsage, fs.Args())
	}
	rack := fs.Arg(0)
	if rack == "" {
		var err error
		if rack, err = configRack(*config); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d := &lease.Dir{Path: *dir}
	switch sub {
	case "status":
		st, err := d.Status(ctx, rack)
		if err != nil {
			return err
		}
		switch {
		case !st.Held:
			_, err = fmt.Fprintf(stdout, "rack %s: free\n", rack)
		case st.Stale:
			_, err = fmt.Fprintf(stdout, "rack %s: stale lease of %s (holder gone; the next lease takes it over)\n", rack, st.Info)
		default:
			_, err = fmt.Fprintf(stdout, "rack %s: leased by %s\n", rack, st.Info)
		}
		return err
	case "lease":
		l, err := d.Acquire(ctx, lease.ForPID(rack, *holder, *pid))
		if err != nil {
			return err
		}
		if err := startKeeper(l, *pid); err != nil {
			return errors.Join(err, l.Release(ctx))
		}
		if l.TookOver != nil {
			fmt.Fprintf(stdout, "rack %s: took over the stale lease of %s\n", rack, l.TookOver)
		}
		_, err = fmt.Fprintf(stdout, "rack %s: leased by %s\n", rack, l.Info)
		return err
	case "release":
		if err := d.Release(ctx, rack, *pid, *force); err != nil {
			return err
		}
		_, err := fmt.Fprintf(stdout, "rack %s: free\n", rack)
		return err
	}
	return fmt.Errorf("%w: unknown sub-command %q", ErrUsage, sub)
}

func configRack(flagValue string) (string, error) {
	_, r, err := fixtures.Load(flagValue)
	if err != nil {
		return "", fmt.Errorf("%w: no RACK given and %w", ErrUsage, err)
	}
	return r.Name, nil
}

// keepCmd is the hidden sub-command `hilrig rack keep`: the keeper that
// holds a lease for another process (see startKeeper).
const keepCmd = "keep"

// startKeeper hands l to a keeper process (this binary, `rack keep`, in
// its own session) that holds the lease's locked descriptor until process
// pid exits or the lease is released; this process then exits without
// ending the lease. The keeper is not waited for: it outlives us.
func startKeeper(l *lease.Lease, pid int) error {
	pidfd, err := lease.PidFD(pid)
	if err != nil {
		return err
	}
	defer pidfd.Close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("lease keeper: %w", err)
	}
	return l.Handoff(func(f *os.File) error {
		cmd := exec.Command(exe, "rack", keepCmd)
		cmd.ExtraFiles = []*os.File{f, pidfd} // fds 3 and 4
		cmd.SysProcAttr = detached()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("lease keeper: %w", err)
		}
		return cmd.Process.Release()
	})
}

// keep is the keeper: fd 3 is the lease's locked file, fd 4 a pidfd of
// the process it is held for ([lease.Keep]).
func keep(ctx context.Context) error {
	f, pidfd := os.NewFile(3, "lease"), os.NewFile(4, "pidfd")
	if f == nil || pidfd == nil {
		return fmt.Errorf("%w: rack keep is started by rack lease", ErrUsage)
	}
	defer f.Close()
	defer pidfd.Close()
	return lease.Keep(ctx, f, pidfd)
}
