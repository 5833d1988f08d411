// Package shmtool is the `hilrig shm` command: list the middleware's
// shared-memory segments with their owners, liveness and counters, and
// remove the stale ones. It only reads segments, except `clean`, which
// removes files no process has open.
package shmtool

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/middleware"

	"github.com/hilrig/hilrig/internal/bytesize"
)

// ErrUsage is wrapped by errors about the command line (exit status 2):
// the binary's one usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage: hilrig shm ls [--dir DIR] [--domain D] [-v] [--json]
       hilrig shm clean [--dir DIR] [--domain D] [--dry-run]

ls     lists segments: topic, domain, size, publisher (pid, alive), subscribers
       (alive/total), state (in-use / stale / bad) and the last position; -v adds
       per-subscriber counters (delivered, lost, overruns, torn retries, epochs).
clean  removes stale segments (no process has them open) and says which.`

// Run runs `hilrig shm` with args (after "shm"). Does not block beyond
// reading /dev/shm.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := cli.Set{Prog: "hilrig shm", Usage: usage}
	for _, name := range []string{"ls", "clean"} {
		set.Commands = append(set.Commands, cli.Command{Name: name,
			Run: func(_ context.Context, rest []string, stdout, stderr io.Writer) error {
				return runSub(name, rest, stdout, stderr)
			}})
	}
	return set.Run(ctx, args, stdout, stderr)
}

// runSub runs ls or clean; they share one flag set.
func runSub(sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shm "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "/dev/shm", "directory holding the segments")
	domain := fs.String("domain", "", "only this domain")
	verbose := fs.Bool("v", false, "ls: per-subscriber counters")
	asJSON := fs.Bool("json", false, "ls: JSON output")
	dry := fs.Bool("dry-run", false, "clean: only say what would be removed")
	fs.Usage = func() { fmt.Fprintln(stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	segs, err := middleware.ListSegments(*dir)
	if err != nil {
		return err
	}
	if *domain != "" {
		kept := segs[:0]
		for _, s := range segs {
			if s.Domain == *domain {
				kept = append(kept, s)
			}
		}
		segs = kept
	}
	if sub == "ls" {
		if *asJSON {
			return writeJSON(stdout, segs)
		}
		return writeTable(stdout, segs, *verbose)
	}
	return clean(stdout, segs, *dry)
}

func state(s middleware.SegmentInfo) string {
	switch {
	case s.InUse && s.Err != nil:
		return "in-use,bad"
	case s.InUse:
		return "in-use"
	case s.Err != nil:
		return "stale,bad"
	}
	return "stale"
}

func writeTable(w io.Writer, segs []middleware.SegmentInfo, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tDOMAIN\tSIZE\tSTATE\tPUBLISHER\tSUBS\tQOS\tSLOTS×PAYLOAD\tEPOCH\tPUBLISHED\tFILE")
	for _, s := range segs {
		if s.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n", s.Topic, s.Domain, size(s.Size), state(s), s.Path)
			fmt.Fprintf(tw, "  error: %v\n", s.Err)
			continue
		}
		pub := "-"
		if s.PublisherPID != 0 {
			pub = fmt.Sprintf("%d (%s)", s.PublisherPID, alive(s.PublisherAlive))
		}
		live := 0
		for _, sub := range s.Subscribers {
			if sub.Alive {
				live++
			}
		}
		qos := "best-effort"
		if s.Reliability == middleware.Reliable {
			qos = "reliable"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%d×%s\t%d\t%d\t%s\n", s.Topic, s.Domain, size(s.Size), state(s), pub,
			live, len(s.Subscribers), qos, s.Slots, size(int64(s.MaxPayload)), s.Epoch, s.Publisher.Published, s.Path)
		if verbose {
			fmt.Fprintf(tw, "  publisher: blocked %v, timeouts %d, dropped subscribers %d, slots mid-write %d\n",
				s.Publisher.Blocked, s.Publisher.Timeouts, s.Publisher.DroppedSubs, s.WritingSlots)
			for _, sub := range s.Subscribers {
				fmt.Fprintf(tw, "  subscriber pid %d (%s) node %q: acked %d/%d, delivered %d, lost %d, overruns %d, torn retries %d, epochs %d\n",
					sub.PID, alive(sub.Alive), sub.Node, sub.Acked, s.Head, sub.Delivered, sub.Lost, sub.Overruns, sub.TornRetries, sub.Epochs)
			}
		}
	}
	if len(segs) == 0 {
		fmt.Fprintln(tw, "(no hilrig segments)")
	}
	return tw.Flush()
}

func alive(b bool) string {
	if b {
		return "alive"
	}
	return "dead"
}

func size(n int64) string { return bytesize.Approx(n, "") }

type jsonSeg struct {
	middleware.SegmentInfo
	Err   string `json:"Err,omitempty"`
	State string
}

func writeJSON(w io.Writer, segs []middleware.SegmentInfo) error {
	out := make([]jsonSeg, 0, len(segs))
	for _, s := range segs {
		j := jsonSeg{SegmentInfo: s, State: state(s)}
		if s.Err != nil {
			j.Err = s.Err.Error()
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func clean(w io.Writer, segs []middleware.SegmentInfo, dry bool) error {
	var removed, kept []string
	var errs []error
	for _, s := range segs {
		if !s.Stale() {
			kept = append(kept, s.Path)
			continue
		}
		if dry {
			fmt.Fprintf(w, "would remove %s (%s, %s)\n", s.Path, state(s), size(s.Size))
			continue
		}
		ok, err := middleware.RemoveSegment(s.Path)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			removed = append(removed, s.Path)
			fmt.Fprintf(w, "removed %s (%s, %s)\n", s.Path, state(s), size(s.Size))
		default:
			kept = append(kept, s.Path) // opened by someone meanwhile
		}
	}
	if !dry {
		if len(removed) == 0 {
			fmt.Fprintln(w, "nothing stale to remove")
		}
		if len(kept) > 0 {
			fmt.Fprintf(w, "kept %d in use: %s\n", len(kept), strings.Join(kept, ", "))
		}
	}
	return errors.Join(errs...)
}
