package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Info is one lease as stored on the controller host. Every field is for
// display: liveness is the lock on the file, not the pid.
type Info struct {
	Rack   string `json:"rack"`
	Holder string `json:"holder"` // who: user name or the -holder flag
	Host   string `json:"host"`
	// PID is the holder process as its own PID namespace numbers it.
	PID int `json:"pid"`
	// Start is the holder's start time in clock ticks since boot (Linux),
	// 0 when unknown. Stored as a JSON string, as lease files always had
	// it; one that is not a number makes the file unreadable (which only
	// matters to display: an unheld file is stale anyway).
	Start int64     `json:"start,omitempty,string"`
	Since time.Time `json:"since"` // wall clock, when acquired
	// Group lets several processes share one lease (the processes of
	// one test run): an Acquire whose Group equals the live lease's joins
	// it. Empty: never shared.
	Group string `json:"group,omitempty"`
	// Token tells two leases of one process apart.
	Token string `json:"token"`
}

// String is "holder (pid P on host H) since T".
func (i Info) String() string {
	return fmt.Sprintf("%s (pid %d on %s) since %s", i.Holder, i.PID, i.Host, i.Since.UTC().Format(time.RFC3339))
}

// Status is a rack's lease as seen now.
type Status struct {
	Info
	Held bool // a lease file exists
	// Stale: the file is left but no process holds its lock (the holder
	// is gone, on whatever host or in whatever PID namespace it ran).
	Stale bool
}

// Dir is a host lease store: one <rack>.lease file and one <rack>.lock
// guard per rack in a directory the caller owns (see the package doc for
// the rules it is checked against on every call). Safe for concurrent use
// by goroutines and processes.
type Dir struct{ Path string }

// DefaultDir is $HILRIG_LEASE_DIR, else /run/lock/hilrig for root and
// /run/lock/hilrig-<uid> for other users: a lease directory must belong
// to its user, so users other than root do not share one (the PostgreSQL
// lease of the results store is lab-wide).
func DefaultDir() *Dir {
	if p := os.Getenv("HILRIG_LEASE_DIR"); p != "" {
		return &Dir{Path: p}
	}
	if uid := os.Geteuid(); uid > 0 {
		return &Dir{Path: "/run/lock/hilrig-" + strconv.Itoa(uid)}
	}
	return &Dir{Path: "/run/lock/hilrig"}
}

var rackName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// open checks rack's name, opens and checks the directory and takes the
// rack's guard. The caller calls done.
func (d *Dir) open(ctx context.Context, rack string) (h *handle, done func(), err error) {
	if !rackName.MatchString(rack) {
		return nil, nil, fmt.Errorf("lease: rack name %q: want letters, digits, '.', '_' or '-'", rack)
	}
	h, err = openDir(d.Path)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := h.lockGuard(ctx, rack)
	if err != nil {
		h.close()
		return nil, nil, err
	}
	return h, func() { unlock(); h.close() }, nil
}

// Self is the Info of this process as holder of rack.
func Self(rack, holder string) Info {
	host, _ := os.Hostname()
	return Info{Rack: rack, Holder: holder, Host: host, PID: os.Getpid(), Start: procStart(os.Getpid())}
}

// ForPID is the Info of holder pid on this host (e.g. the shell that ran
// `hilrig rack lease`); the lease lasts as long as that process when a
// keeper holds it for it ([Lease.Handoff], [Keep]).
func ForPID(rack, holder string, pid int) Info {
	i := Self(rack, holder)
	i.PID, i.Start = pid, procStart(pid)
	return i
}

// Lease is an acquired lease. Its methods are safe for concurrent use.
type Lease struct {
	Info
	// TookOver is the stale lease this one replaced (nil: none).
	TookOver *Info
	// Joined: the lease was already held by another member of Info.Group
	// (then Info is that member's, and TookOver nil).
	Joined bool

	dir *Dir
	mu  sync.Mutex
	f   *os.File // holds the lock; nil once released or handed off
}

// maxFile bounds how much of a lease file is read.
const maxFile = 64 << 10

// Acquire takes the rack's lease for who (from [Self] or [ForPID]). A
// lease whose file a live process holds fails with an error matching
// ErrHeld that names its holder, unless who.Group is that lease's group
// (then it joins). A stale one is taken over (Lease.TookOver). Blocks
// only for the guard's critical section, bounded by ctx.
func (d *Dir) Acquire(ctx context.Context, who Info) (*Lease, error) {
	h, done, err := d.open(ctx, who.Rack)
	if err != nil {
		return nil, err
	}
	defer done()
	cur, err := h.openLease(who.Rack)
	if err != nil {
		return nil, err
	}
	l := &Lease{dir: d}
	if cur != nil {
		info, live, err := inspect(h, cur, who.Rack)
		if err != nil {
			cur.Close()
			return nil, err
		}
		if live {
			if who.Group == "" || info.Group != who.Group {
				cur.Close()
				return nil, fmt.Errorf("%w: rack %s is held by %s", ErrHeld, who.Rack, info)
			}
			// Join: a shared lock through our own description of the
			// file (under the guard, so the lease cannot end meanwhile).
			if err := lockShared(cur); err != nil {
				cur.Close()
				return nil, fmt.Errorf("lease: %s: %w", h.file(who.Rack), err)
			}
			l.Info, l.Joined, l.f = *info, true, cur
			return l, nil
		}
		cur.Close()
		l.TookOver = info
	}
	who.Since = time.Now()
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	who.Token = hex.EncodeToString(tok[:])
	b, err := json.MarshalIndent(who, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	if l.f, err = h.create(who.Rack, append(b, '\n')); err != nil {
		return nil, err
	}
	l.Info = who
	return l, nil
}

// inspect reads an open lease file: its Info (a placeholder naming the
// file when unreadable) and whether a live process holds it.
func inspect(h *handle, f *os.File, rack string) (*Info, bool, error) {
	live, err := heldByOther(f)
	if err != nil {
		return nil, false, fmt.Errorf("lease: %s: %w", h.file(rack), err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		return nil, false, fmt.Errorf("lease: %s: %w", h.file(rack), err)
	}
	var i Info
	if json.Unmarshal(b, &i) != nil {
		i = Info{Rack: rack, Holder: "unreadable lease file " + h.file(rack)}
	}
	return &i, live, nil
}

// Status reads the rack's lease. No lease: Held false.
func (d *Dir) Status(ctx context.Context, rack string) (Status, error) {
	h, done, err := d.open(ctx, rack)
	if err != nil {
		return Status{}, err
	}
	defer done()
	cur, err := h.openLease(rack)
	if err != nil || cur == nil {
		return Status{Info: Info{Rack: rack}}, err
	}
	defer cur.Close()
	info, live, err := inspect(h, cur, rack)
	if err != nil {
		return Status{}, err
	}
	return Status{Info: *info, Held: true, Stale: !live}, nil
}

// Release removes the rack's lease if it is pid's on this host (or stale,
// or force is set); a keeper holding it for pid ([Keep]) then exits.
// Returns ErrNotHeld naming the holder otherwise. Blocks briefly on the
// guard (bounded by ctx).
func (d *Dir) Release(ctx context.Context, rack string, pid int, force bool) error {
	h, done, err := d.open(ctx, rack)
	if err != nil {
		return err
	}
	defer done()
	cur, err := h.openLease(rack)
	if err != nil || cur == nil {
		return err
	}
	info, live, err := inspect(h, cur, rack)
	cur.Close()
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	if !force && live && (info.PID != pid || info.Host != host) {
		return fmt.Errorf("%w: rack %s is held by %s (use -force to break it)", ErrNotHeld, rack, info)
	}
	return h.remove(rack)
}

// Release gives the lease back: the lock is dropped, and the file removed
// unless other members of the group still hold it. Returns ErrNotHeld if
// the lease was broken (release -force) or handed off meanwhile. Blocks
// briefly on the guard (bounded by ctx).
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("%w: rack %s: lease already released", ErrNotHeld, l.Rack)
	}
	h, done, err := l.dir.open(ctx, l.Rack)
	if err != nil {
		return err
	}
	defer done()
	mine := l.f
	l.f = nil
	same, err := h.same(mine, l.Rack)
	mine.Close() // drops our lock
	if err != nil || !same {
		return errors.Join(err, fmt.Errorf("%w: rack %s: the lease was broken (release -force) while held", ErrNotHeld, l.Rack))
	}
	cur, err := h.openLease(l.Rack)
	if err != nil || cur == nil {
		return err
	}
	live, err := heldByOther(cur)
	cur.Close()
	if err != nil {
		return fmt.Errorf("lease: %s: %w", h.file(l.Rack), err)
	}
	if live { // other members of the group
		return nil
	}
	return h.remove(l.Rack)
}

// Handoff gives the lease to another process: start starts it with f
// among its files (exec.Cmd.ExtraFiles); then l closes its own
// descriptor, so the lease lives exactly as long as that process keeps f
// open ([Keep]). If start fails the lease stays l's. Afterwards l is
// released as far as this process goes.
func (l *Lease) Handoff(start func(f *os.File) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("%w: rack %s: lease already released", ErrNotHeld, l.Rack)
	}
	if err := start(l.f); err != nil {
		return err
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// file is the path of rack's lease file, for messages.
func (h *handle) file(rack string) string { return filepath.Join(h.path, rack+".lease") }

// WaitHeld calls try until it does not fail with ErrHeld, wait has passed
// or ctx ends, every 250 ms, and returns try's last error (saying how long
// it waited). For lockers that wait for a held rack (rig.HostLeases,
// the results store's lab-wide lease). Blocks up to wait.
func WaitHeld(ctx context.Context, wait time.Duration, try func() error) error {
	end := time.Now().Add(wait)
	for {
		err := try()
		if !errors.Is(err, ErrHeld) {
			return err
		}
		if !time.Now().Before(end) {
			if wait > 0 {
				err = fmt.Errorf("%w (waited %v)", err, wait)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
