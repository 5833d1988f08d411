// Package ptpcli implements "hilrig ptp": status (a table or JSON of each
// ptp4l's state) and watch (a line per sample, lock transitions marked).
// cmd/hilrig/cmd_ptp.go only forwards to Run.
package ptpcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/timesync"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

// ErrRead: at least one socket could not be read (details printed).
var ErrRead = errors.New("ptp: some sockets could not be read")

const usage = `usage:
  hilrig ptp status --uds PATH [--uds PATH ...] [--json] [--timeout 500ms]
  hilrig ptp watch  --uds PATH [--uds PATH ...] [--period 1.25s] [--bound 1us]
                    [--expect-gm 02000a.fffe.e90001] [--count N]

PATH is a ptp4l uds_address (needs root: the socket is 0660 root).`

// Run executes "hilrig ptp <sub> …". Blocks (watch: until ctx ends or
// --count samples).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Set{Prog: "hilrig ptp", Usage: usage, Commands: []cli.Command{
		{Name: "status", Run: status},
		{Name: "watch", Run: watch},
	}}.Run(ctx, args, stdout, stderr)
}

type udsList []string

func (u *udsList) String() string     { return strings.Join(*u, ",") }
func (u *udsList) Set(s string) error { *u = append(*u, s); return nil }

func parse(fs *flag.FlagSet, args []string, uds *udsList) error {
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage) }
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if len(*uds) == 0 {
		return fmt.Errorf("%w: --uds PATH is required (ptp4l's uds_address)", ErrUsage)
	}
	return nil
}

// Row is one socket's status in "status --json" output.
type Row struct {
	UDS    string           `json:"uds"`
	Status *timesync.Status `json:"status,omitempty"`
	Error  string           `json:"error,omitempty"`
}

func status(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ptp status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var uds udsList
	fs.Var(&uds, "uds", "ptp4l management socket path (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "per-request deadline")
	if err := parse(fs, args, &uds); err != nil {
		return err
	}
	rows := make([]Row, 0, len(uds))
	failed := 0
	for _, p := range uds {
		row := Row{UDS: p}
		st, err := readOnce(ctx, p, *timeout)
		if err != nil {
			row.Error = err.Error()
			failed++
		} else {
			row.Status = &st
		}
		rows = append(rows, row)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UDS\tSTATE\tOFFSET\tPATH DELAY\tGM\tSTEPS\tGM PRESENT\tLAST SYNC\tPHC")
		for _, r := range rows {
			if r.Status == nil {
				fmt.Fprintf(tw, "%s\tERROR\t%s\n", r.UDS, r.Error)
				continue
			}
			s := r.Status
			phc := "none"
			if s.HasPHC {
				phc = fmt.Sprintf("%s sys-phc %v ±%v", s.PHCDevice, s.PHCSysOffset, s.PHCSysDelay)
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\t%d\t%t\t%s\t%s\n", r.UDS, s.PortState, s.Offset, s.MeanPathDelay,
				s.GMIdentity, s.StepsRemoved, s.GMPresent, ingressAge(*s), phc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w (%d of %d)", ErrRead, failed, len(uds))
	}
	return nil
}

// ingressAge prints how long ago the last Sync arrived, when the ingress
// stamp is on the system clock (software timestamping).
func ingressAge(s timesync.Status) string {
	if s.LastSyncIngress.Ns == 0 {
		return "never"
	}
	if s.LastSyncIngress.Clock != timesync.Realtime {
		return s.LastSyncIngress.String()
	}
	return fmt.Sprintf("%v ago", s.ReadAt.Sub(time.Unix(0, s.LastSyncIngress.Ns)).Round(time.Millisecond))
}

func readOnce(ctx context.Context, path string, timeout time.Duration) (timesync.Status, error) {
	src, err := timesync.DialPTP4L(ctx, path, &timesync.PTP4LOptions{RequestTimeout: timeout})
	if err != nil {
		return timesync.Status{}, err
	}
	defer src.Close()
	return src.Status(ctx)
}

func watch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ptp watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var uds udsList
	fs.Var(&uds, "uds", "ptp4l management socket path (repeatable)")
	period := fs.Duration("period", timesync.DefaultPeriod, "poll period (longer than the Sync interval)")
	bound := fs.Duration("bound", time.Microsecond, "largest |offset| that counts as locked")
	expect := fs.String("expect-gm", "", "required grandmaster identity (default: the first one seen)")
	count := fs.Int("count", 0, "stop after this many polls (0: until interrupted)")
	if err := parse(fs, args, &uds); err != nil {
		return err
	}
	if *period <= 0 || *bound <= 0 || *count < 0 {
		return fmt.Errorf("%w: --period and --bound must be > 0, --count ≥ 0", ErrUsage)
	}
	var gm timesync.ClockIdentity
	if *expect != "" {
		var err error
		if gm, err = timesync.ParseClockIdentity(*expect); err != nil {
			return fmt.Errorf("%w: --expect-gm: %w", ErrUsage, err)
		}
	}
	type board struct {
		path   string
		src    *timesync.PTP4L
		tr     *timesync.Tracker
		locked bool
	}
	boards := make([]*board, 0, len(uds))
	for _, p := range uds {
		src, err := timesync.DialPTP4L(ctx, p, nil)
		if err != nil {
			return err
		}
		defer src.Close()
		boards = append(boards, &board{path: p, src: src, tr: timesync.NewTracker(gm, *bound)})
	}
	tick := time.NewTicker(*period)
	defer tick.Stop()
	for n := 0; *count == 0 || n < *count; n++ {
		for _, b := range boards {
			st, err := b.src.Status(ctx)
			if ctx.Err() != nil {
				return nil
			}
			v := b.tr.Observe(st, err)
			mark := ""
			switch {
			case v.Locked && !b.locked:
				mark = "  <== LOCKED"
			case !v.Locked && b.locked:
				mark = "  <== LOCK LOST: " + v.Detail
			}
			b.locked = v.Locked
			if err != nil {
				fmt.Fprintf(stdout, "%s %s ERROR %v%s\n", st.ReadAt.Format("15:04:05.000"), b.path, err, mark)
				continue
			}
			fmt.Fprintf(stdout, "%s %s %-12s offset %9v delay %9v gm %s %s%s\n", st.ReadAt.Format("15:04:05.000"), b.path,
				st.PortState, st.Offset, st.MeanPathDelay, st.GMIdentity, v.Cond, mark)
		}
		if *count != 0 && n+1 == *count {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}
