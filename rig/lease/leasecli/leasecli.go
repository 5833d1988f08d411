// Package leasecli is "hilrig rack": status, lease and release of a rack
// lease on the controller host (package lease).
package leasecli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/report/store/postgres"
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
or found walking up from the current directory). When the results store
(-results, default ginkgo.config's results) is PostgreSQL, lease also holds
the rack's lab-wide lease there, so controllers on other hosts see it.`

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
	results := fs.String("results", "", "lease: results store; with a postgres:// URL the lease is also held lab-wide there (default: ginkgo.config's results)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: one RACK at most, got %q", ErrUsage, fs.Args())
	}
	rack := fs.Arg(0)
	cfg, cfgRack, cfgErr := fixtures.Load(*config)
	if rack == "" {
		if cfgErr != nil {
			return fmt.Errorf("%w: no RACK given and %w", ErrUsage, cfgErr)
		}
		rack = cfgRack.Name
	}
	if *results == "" && cfgErr == nil {
		*results = cfg.ResultsDSN()
	}
	lab := ""
	if strings.HasPrefix(*results, "postgres://") || strings.HasPrefix(*results, "postgresql://") {
		lab = *results
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
		if err := startKeeper(ctx, l, *pid, lab); err != nil {
			// The keeper may have taken the lease over before it failed.
			return errors.Join(err, d.Release(ctx, rack, *pid, false))
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

// keepCmd is the hidden sub-command `hilrig rack keep`: the keeper that
// holds a lease for another process (see startKeeper).
const keepCmd = "keep"

// startKeeper hands l to a keeper process (this binary, `rack keep`, in
// its own session) that holds the lease's locked descriptor until process
// pid exits or the lease is released; this process then exits without
// ending the lease. With lab (a PostgreSQL URL) the keeper also takes the
// rack's lab-wide lease there and holds its session as long. It waits for
// the keeper's word (bounded by ctx), not for the keeper: it outlives us.
func startKeeper(ctx context.Context, l *lease.Lease, pid int, lab string) error {
	pidfd, err := lease.PidFD(pid)
	if err != nil {
		return err
	}
	defer pidfd.Close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("lease keeper: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("lease keeper: %w", err)
	}
	defer r.Close()
	err = l.Handoff(func(f *os.File) error {
		defer w.Close()
		cmd := exec.Command(exe, "rack", keepCmd)
		cmd.ExtraFiles = []*os.File{f, pidfd, w} // fds 3, 4 and 5
		cmd.Env = append(os.Environ(), keepLabEnv+"="+lab, keepRackEnv+"="+l.Rack, keepHolderEnv+"="+l.Holder)
		cmd.SysProcAttr = detached()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("lease keeper: %w", err)
		}
		return cmd.Process.Release()
	})
	if err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = r.SetReadDeadline(d)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case line == "ok":
		return nil
	case strings.HasPrefix(line, "held: "):
		return fmt.Errorf("%w: %s", lease.ErrHeld, strings.TrimPrefix(line, "held: "))
	case line != "":
		return fmt.Errorf("lease keeper: %s", strings.TrimPrefix(line, "error: "))
	}
	return fmt.Errorf("lease keeper: no word from it: %w", err)
}

// The keeper's environment: the lab-wide store (empty: none), the rack
// and the holder.
const (
	keepLabEnv    = "HILRIG_RACK_KEEP_LAB"
	keepRackEnv   = "HILRIG_RACK_KEEP_RACK"
	keepHolderEnv = "HILRIG_RACK_KEEP_HOLDER"
)

// keep is the keeper: fd 3 is the lease's locked file, fd 4 a pidfd of
// the process it is held for ([lease.Keep]), fd 5 where it reports "ok",
// "held: …" or "error: …" once it holds the lease (the lab-wide one too).
func keep(ctx context.Context) error {
	f, pidfd, word := os.NewFile(3, "lease"), os.NewFile(4, "pidfd"), os.NewFile(5, "word")
	if f == nil || pidfd == nil || word == nil {
		return fmt.Errorf("%w: rack keep is started by rack lease", ErrUsage)
	}
	defer f.Close()
	defer pidfd.Close()
	release := func() error { return nil }
	if dsn := os.Getenv(keepLabEnv); dsn != "" {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rel, err := postgres.RackLeases{DSN: dsn, Holder: os.Getenv(keepHolderEnv) + " (hilrig rack lease)"}.Lock(lctx, os.Getenv(keepRackEnv))
		cancel()
		if err != nil {
			prefix := "error: "
			if errors.Is(err, postgres.ErrRackHeld) {
				prefix = "held: "
			}
			fmt.Fprintln(word, prefix+strings.ReplaceAll(err.Error(), "\n", " "))
			word.Close()
			return err
		}
		release = rel
	}
	fmt.Fprintln(word, "ok")
	word.Close()
	return errors.Join(lease.Keep(ctx, f, pidfd), release())
}
