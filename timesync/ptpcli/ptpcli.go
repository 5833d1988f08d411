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
	"strconv"
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

// ErrWatch: "watch" saw a failure: a socket that never answered, a poll
// that still failed at the end, the wrong grandmaster, or a lock lost
// and not regained by the end (unless --allow-lock-loss). The error
// names each socket and what went wrong; a summary is printed first.
var ErrWatch = errors.New("ptp watch")

const usage = `usage:
  hilrig ptp status --uds PATH [--uds PATH ...] [--json] [--timeout 500ms]
  hilrig ptp watch  --uds PATH [--uds PATH ...] [--period 1.25s] [--bound auto]
                    [--expect-gm 02000a.fffe.e90001] [--gm-class 6,7]
                    [--max-path-delay 1ms] [--count N] [--timeout 500ms]
                    [--allow-lock-loss]

PATH is a ptp4l uds_address (needs root: the socket is 0660 root): a Unix
datagram socket, at most 107 bytes long.
watch --bound auto: 20us with software timestamping, 1us with hardware
(see docs/timesync.md). --gm-class lists the grandmaster clockClasses
that count as locked (default any but 255, slave-only, which never does);
--max-path-delay bounds the mean path delay (a negative one never counts).
watch retries a socket that is not up yet at every poll; it exits
non-zero when a socket never answered, its last poll failed, it followed
another grandmaster than --expect-gm (or than the first one seen), or it
was locked and is not at the end (lock lost; --allow-lock-loss accepts
that), after printing a summary per socket.`

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

// boardWatch is one socket's state and tally in "watch".
type boardWatch struct {
	path   string
	src    *timesync.PTP4L
	tr     *timesync.Tracker // nil until the bound is known (first answer)
	locked bool
	// everLocked: some poll was locked; lostAt is the last loss of lock.
	everLocked bool
	lostAt     time.Time

	polls, failed, good, wrongGM int
	lastErr                      error
	lastGM                       timesync.ClockIdentity
	last                         timesync.Verdict
}

func watch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ptp watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var uds udsList
	fs.Var(&uds, "uds", "ptp4l management socket path (repeatable)")
	period := fs.Duration("period", timesync.DefaultPeriod, "poll period (longer than the Sync interval)")
	boundArg := fs.String("bound", "auto", "largest |offset| that counts as locked: a duration, or auto (by timestamping mode)")
	expect := fs.String("expect-gm", "", "required grandmaster identity (default: the first one seen)")
	count := fs.Int("count", 0, "stop after this many polls (0: until interrupted)")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "per-request deadline")
	classes := fs.String("gm-class", "", "accepted grandmaster clockClasses, comma-separated (default: any but 255)")
	maxDelay := fs.Duration("max-path-delay", timesync.DefaultMaxPathDelay, "largest mean path delay that counts as locked")
	allowLoss := fs.Bool("allow-lock-loss", false, "exit 0 even when a socket was locked and is not at the end")
	if err := parse(fs, args, &uds); err != nil {
		return err
	}
	policy := timesync.LockPolicy{MaxPathDelay: *maxDelay}
	if *classes != "" {
		for _, f := range strings.Split(*classes, ",") {
			c, err := strconv.ParseUint(strings.TrimSpace(f), 10, 8)
			if err != nil {
				return fmt.Errorf("%w: --gm-class %q: want clockClass numbers 0..254, comma-separated", ErrUsage, *classes)
			}
			policy.GMClasses = append(policy.GMClasses, uint8(c))
		}
	}
	if *maxDelay <= 0 {
		return fmt.Errorf("%w: --max-path-delay %v: want a duration > 0", ErrUsage, *maxDelay)
	}
	if err := policy.Validate(); err != nil {
		return fmt.Errorf("%w: --gm-class %q: %w", ErrUsage, *classes, err)
	}
	var bound time.Duration
	if *boundArg != "auto" {
		var err error
		if bound, err = time.ParseDuration(*boundArg); err != nil || bound <= 0 {
			return fmt.Errorf("%w: --bound %q: want a duration > 0 or auto", ErrUsage, *boundArg)
		}
	}
	if *period <= 0 || *count < 0 || *timeout <= 0 {
		return fmt.Errorf("%w: --period and --timeout must be > 0, --count ≥ 0", ErrUsage)
	}
	var gm timesync.ClockIdentity
	if *expect != "" {
		var err error
		if gm, err = timesync.ParseClockIdentity(*expect); err != nil {
			return fmt.Errorf("%w: --expect-gm: %w", ErrUsage, err)
		}
	}
	boards := make([]*boardWatch, 0, len(uds))
	for _, p := range uds {
		boards = append(boards, &boardWatch{path: p})
	}
	defer func() {
		for _, b := range boards {
			if b.src != nil {
				_ = b.src.Close()
			}
		}
	}()
	opts := &timesync.PTP4LOptions{RequestTimeout: *timeout}
	tick := time.NewTicker(*period)
	defer tick.Stop()
polls:
	for n := 0; *count == 0 || n < *count; n++ {
		for _, b := range boards {
			st, err := b.poll(ctx, opts)
			if ctx.Err() != nil {
				break polls // a poll cut short by the interrupt is not a sample
			}
			if errors.Is(err, timesync.ErrPermission) {
				// Waiting cannot fix this one: say so now.
				return fmt.Errorf("%w: %s: %w", ErrWatch, b.path, err)
			}
			if b.tr == nil && err == nil {
				bd := bound
				if bd == 0 {
					bd = timesync.DefaultBound(st.LastSyncIngress.Clock)
				}
				b.tr = timesync.NewTracker(gm, bd, &policy)
			}
			v := timesync.Verdict{Cond: timesync.CondReadError}
			if err != nil {
				v.Detail = err.Error()
			}
			if b.tr != nil {
				v = b.tr.Observe(st, err)
			}
			b.tally(st, err, v)
			mark := ""
			switch {
			case v.Locked && !b.locked:
				mark = "  <== LOCKED"
			case !v.Locked && b.locked:
				mark = "  <== LOCK LOST: " + v.Detail
				b.lostAt = st.ReadAt
			}
			b.locked = v.Locked
			b.everLocked = b.everLocked || v.Locked
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
			break polls
		case <-tick.C:
		}
	}
	var problems []string
	for _, b := range boards {
		fmt.Fprintln(stdout, b.summary())
		problems = append(problems, b.problems(gm, *allowLoss)...)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrWatch, strings.Join(problems, "; "))
	}
	return nil
}

// poll reads the socket once, dialling first if it is not connected
// yet: ptp4l may not be up when the watch starts, and then the watch
// retries at every poll, as the reader does after a ptp4l restart.
func (b *boardWatch) poll(ctx context.Context, opts *timesync.PTP4LOptions) (timesync.Status, error) {
	if b.src == nil {
		src, err := timesync.DialPTP4L(ctx, b.path, opts)
		if err != nil {
			return timesync.Status{ReadAt: time.Now()}, err
		}
		b.src = src
	}
	return b.src.Status(ctx)
}

func (b *boardWatch) tally(st timesync.Status, err error, v timesync.Verdict) {
	b.polls++
	b.lastErr, b.last = err, v
	switch {
	case err != nil:
		b.failed++
	case v.Locked:
		b.good++
	}
	if v.Cond == timesync.CondWrongGM {
		b.wrongGM++
		b.lastGM = st.GMIdentity
	}
}

func (b *boardWatch) summary() string {
	last := b.last.Cond.String()
	if b.polls == 0 {
		last = "none"
	}
	s := fmt.Sprintf("summary %s: %d polls, %d locked, %d failed, %d wrong grandmaster; last: %s", b.path, b.polls, b.good, b.failed, b.wrongGM, last)
	if b.tr != nil && b.tr.ExpectedGM() != 0 {
		s += fmt.Sprintf(" (grandmaster %s)", b.tr.ExpectedGM())
	}
	return s
}

// problems says what makes this socket's watch a failure (none: fine).
// A board that answered but never locked is not one: a short watch of a
// board still locking is legitimate, and the lines show it. A board that
// was locked and is not at the end is (unless allowLoss): whatever ran
// while it watched may have run on a clock that lost its lock.
func (b *boardWatch) problems(expect timesync.ClockIdentity, allowLoss bool) []string {
	var p []string
	switch {
	case b.polls == 0:
		p = append(p, fmt.Sprintf("%s: interrupted before the first poll completed", b.path))
	case b.failed == b.polls:
		p = append(p, fmt.Sprintf("%s: no answer in %d poll(s): %v", b.path, b.polls, b.lastErr))
	case b.lastErr != nil:
		p = append(p, fmt.Sprintf("%s: the last poll failed (%d of %d failed): %v", b.path, b.failed, b.polls, b.lastErr))
	}
	if b.wrongGM > 0 {
		want := "the first one seen"
		if expect != 0 {
			want = expect.String() + " (--expect-gm)"
		} else if b.tr != nil {
			want = b.tr.ExpectedGM().String() + " (the first one seen)"
		}
		p = append(p, fmt.Sprintf("%s: grandmaster %s in %d of %d poll(s), want %s", b.path, b.lastGM, b.wrongGM, b.polls, want))
	}
	if b.everLocked && !b.locked && !allowLoss && b.lastErr == nil {
		p = append(p, fmt.Sprintf("%s: lock lost at %s and not regained (%d of %d poll(s) locked; last: %s: %s; --allow-lock-loss accepts this)",
			b.path, b.lostAt.Format("15:04:05.000"), b.good, b.polls, b.last.Cond, b.last.Detail))
	}
	return p
}
