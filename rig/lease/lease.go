package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/hilrig/hilrig/internal/procstat"
)

// ErrHeld is returned by Acquire when a live holder has the rack.
var ErrHeld = errors.New("lease: rack is leased")

// ErrNotHeld is returned by Release when the lease is not the caller's.
var ErrNotHeld = errors.New("lease: not the holder")

// Info is one lease as stored on the controller host.
type Info struct {
	Rack   string `json:"rack"`
	Holder string `json:"holder"` // who: user name or the -holder flag
	Host   string `json:"host"`
	PID    int    `json:"pid"`
	// Start identifies the holder process beyond its pid (which the kernel
	// reuses): its start time in clock ticks since boot (Linux), 0 when
	// unknown (elsewhere, or the process already gone). Stored as a JSON
	// string, as lease files always had it; one that is not a number makes
	// the file unreadable, and so stale.
	Start int64     `json:"start,omitempty,string"`
	Since time.Time `json:"since"` // wall clock, when acquired
	// Token tells two leases of one process apart (Release checks it).
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
	// Stale: the holder process is gone (same host only; a lease of
	// another host is never judged stale here).
	Stale bool
}

// Dir is the host lease store: one <rack>.lease file and one <rack>.lock
// guard per rack in a directory. Safe for concurrent use by goroutines and
// processes (the guard serialises every read-modify-write).
type Dir struct{ Path string }

// DefaultDir is $HILRIG_LEASE_DIR, else /run/lock/hilrig (shared by every
// user of the controller host, so two people see each other's leases).
func DefaultDir() *Dir {
	if p := os.Getenv("HILRIG_LEASE_DIR"); p != "" {
		return &Dir{Path: p}
	}
	return &Dir{Path: "/run/lock/hilrig"}
}

var rackName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func (d *Dir) paths(rack string) (lease, guard string, err error) {
	if !rackName.MatchString(rack) {
		return "", "", fmt.Errorf("lease: rack name %q: want letters, digits, '.', '_' or '-'", rack)
	}
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return "", "", fmt.Errorf("lease: %w", err)
	}
	// Shared by every user of the host: world-writable and sticky like
	// /tmp (best effort: not ours to change if someone else made it).
	_ = os.Chmod(d.Path, os.ModePerm|os.ModeSticky)
	return filepath.Join(d.Path, rack+".lease"), filepath.Join(d.Path, rack+".lock"), nil
}

// Self is the Info of this process as holder of rack.
func Self(rack, holder string) Info {
	host, _ := os.Hostname()
	return Info{Rack: rack, Holder: holder, Host: host, PID: os.Getpid(), Start: procStart(os.Getpid())}
}

// ForPID is the Info of holder pid on this host (e.g. the shell that ran
// `hilrig rack lease`): the lease lasts as long as that process.
func ForPID(rack, holder string, pid int) Info {
	i := Self(rack, holder)
	i.PID, i.Start = pid, procStart(pid)
	return i
}

// Lease is an acquired lease.
type Lease struct {
	Info
	// TookOver is the stale lease this one replaced (nil: none).
	TookOver *Info
	dir      *Dir
}

// Release gives the lease back. Safe to call once; blocks briefly on the
// guard (bounded by ctx).
func (l *Lease) Release(ctx context.Context) error {
	return l.dir.release(ctx, l.Rack, l.Token, false)
}

// Acquire takes the rack's lease for who (from [Self] or [ForPID]). A
// lease held by a live process fails with an error matching ErrHeld that
// names its holder; a stale one is taken over (Lease.TookOver). Blocks
// only for the guard's critical section, bounded by ctx.
func (d *Dir) Acquire(ctx context.Context, who Info) (*Lease, error) {
	leasePath, guardPath, err := d.paths(who.Rack)
	if err != nil {
		return nil, err
	}
	unlock, err := lockGuard(ctx, guardPath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := read(leasePath)
	if err != nil {
		return nil, err
	}
	l := &Lease{dir: d}
	if cur != nil {
		if alive(*cur) {
			return nil, fmt.Errorf("%w: rack %s is held by %s", ErrHeld, who.Rack, cur)
		}
		l.TookOver = cur
	}
	who.Since = time.Now()
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	who.Token = hex.EncodeToString(tok[:])
	if err := write(leasePath, who); err != nil {
		return nil, err
	}
	l.Info = who
	return l, nil
}

// Status reads the rack's lease. No lease: Held false.
func (d *Dir) Status(ctx context.Context, rack string) (Status, error) {
	leasePath, guardPath, err := d.paths(rack)
	if err != nil {
		return Status{}, err
	}
	unlock, err := lockGuard(ctx, guardPath)
	if err != nil {
		return Status{}, err
	}
	defer unlock()
	cur, err := read(leasePath)
	if err != nil || cur == nil {
		return Status{Info: Info{Rack: rack}}, err
	}
	return Status{Info: *cur, Held: true, Stale: !alive(*cur)}, nil
}

// Release removes the rack's lease if it is pid's on this host (or stale,
// or force is set). Returns ErrNotHeld naming the holder otherwise.
func (d *Dir) Release(ctx context.Context, rack string, pid int, force bool) error {
	st, err := d.Status(ctx, rack)
	if err != nil || !st.Held {
		return err
	}
	host, _ := os.Hostname()
	if !force && !st.Stale && (st.PID != pid || st.Host != host) {
		return fmt.Errorf("%w: rack %s is held by %s (use -force to break it)", ErrNotHeld, rack, st.Info)
	}
	return d.release(ctx, rack, st.Token, force)
}

func (d *Dir) release(ctx context.Context, rack, token string, force bool) error {
	leasePath, guardPath, err := d.paths(rack)
	if err != nil {
		return err
	}
	unlock, err := lockGuard(ctx, guardPath)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := read(leasePath)
	if err != nil || cur == nil {
		return err
	}
	if cur.Token != token && !force {
		return fmt.Errorf("%w: rack %s is now held by %s", ErrNotHeld, rack, cur)
	}
	if err := os.Remove(leasePath); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

func read(path string) (*Info, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil {
		// A torn or foreign file must not lock the rack forever: it holds
		// no live holder, so it is stale.
		return &Info{Holder: "unreadable lease file " + path}, nil
	}
	return &i, nil
}

// write replaces path atomically (temp file, fsync, rename).
func write(path string, i Info) error {
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

// alive reports whether i's holder may still be running. A lease of
// another host is alive (this host cannot tell); a malformed one is not.
func alive(i Info) bool {
	if i.PID <= 0 {
		return false
	}
	if host, _ := os.Hostname(); i.Host != host {
		return true
	}
	if !pidAlive(i.PID) {
		return false
	}
	// The pid was reused by another process when its start time differs.
	if i.Start == 0 {
		return true
	}
	same, err := procstat.Same(i.PID, i.Start)
	return err == nil && same
}
