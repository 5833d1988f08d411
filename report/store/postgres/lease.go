package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrRackHeld is matched by a *HeldError: another controller holds the
// rack's lab-wide lease.
var ErrRackHeld = errors.New("rack is leased lab-wide")

// HeldError names who holds a rack's lab-wide lease.
type HeldError struct {
	Rack  string
	By    string // "holder (pid P on host H) since T"
	Store string // the results store, password redacted
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("rack %s is held lab-wide by %s (results store %s)", e.Rack, e.By, e.Store)
}

// Is makes every *HeldError match ErrRackHeld.
func (e *HeldError) Is(target error) bool { return target == ErrRackHeld }

// RackLeases is the lab-wide rack lease (a rig.RackLocker): a
// session-level PostgreSQL advisory lock keyed by the rack, held on a
// connection of its own for as long as the lease lasts, so controllers on
// two hosts writing to one results store cannot drive one rack. When the
// holder dies its session ends and the lock is gone; a holder whose host
// vanishes without closing the connection is dropped by the server's TCP
// keepalive (set per session: 10 s idle, 3 probes 5 s apart). A table
// hilrig_rack_lease names the holder for the error of the one refused.
//
// Every holder takes the lock shared; holders of one Group (the processes
// of one test run) share the rack, any other waits or fails. Acquiring is
// serialised by a transaction-level advisory lock, so the check and the
// take are atomic. Safe for concurrent use; Lock blocks for the round
// trips (it does not wait for a held rack: callers retry).
type RackLeases struct {
	DSN    string
	Holder string // who: user or CI job; default $USER
	// Group, if set, lets every process of one test run share the lease.
	Group string
	// Logger hears that a held lease's session was lost (the lock with
	// it). Default: discard.
	Logger *slog.Logger
}

// leaseGuard serialises lease checks and takes ("hilrig lease" in ASCII).
const leaseGuard = 0x68696c7269676c65

// leaseKey is the advisory lock key of rack: 64 bits of FNV-1a.
func leaseKey(rack string) int64 {
	h := fnv.New64a()
	h.Write([]byte("hilrig rack lease\x00" + rack))
	return int64(h.Sum64())
}

// heartbeat is how often a held lease checks its session.
const heartbeat = 5 * time.Second

// Lock takes rack's lab-wide lease, or fails with a *HeldError naming the
// holder. The returned func releases it (and reports a lost session).
func (p RackLeases) Lock(ctx context.Context, rack string) (func() error, error) {
	name := Redact(p.DSN)
	cfg, err := pgx.ParseConfig(p.DSN)
	if err != nil {
		return nil, fmt.Errorf("lab-wide lease: %s: %w", name, err)
	}
	cfg.RuntimeParams["application_name"] = "hilrig rack lease " + rack
	for k, v := range map[string]string{"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"} {
		cfg.RuntimeParams[k] = v
	}
	holder := p.Holder
	if holder == "" {
		holder = os.Getenv("USER")
	}
	host, _ := os.Hostname()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lab-wide lease of rack %s: %s: %w", rack, name, err)
	}
	if err := p.try(ctx, conn, rack, holder, host); err != nil {
		conn.Close(context.Background())
		if !errors.Is(err, ErrRackHeld) {
			err = fmt.Errorf("lab-wide lease of rack %s: %s: %w", rack, name, err)
		}
		return nil, err
	}
	h := &heldLease{conn: conn, rack: rack, key: leaseKey(rack), name: name, log: p.Logger, stop: make(chan struct{}), done: make(chan struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	go h.watch()
	return h.release, nil
}

// try takes the lease on conn, or fails with a *HeldError.
func (p RackLeases) try(ctx context.Context, conn *pgx.Conn, rack, holder, host string) error {
	key := leaseKey(rack)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }() // after Commit a no-op
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(leaseGuard)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hilrig_rack_lease (
		rack TEXT PRIMARY KEY, grp TEXT NOT NULL, holder TEXT NOT NULL, host TEXT NOT NULL,
		pid INTEGER NOT NULL, since TIMESTAMPTZ NOT NULL)`); err != nil {
		return err
	}
	// Free when nobody holds the key: probe with an exclusive try (under
	// the guard nobody else can take it meanwhile), then hold it shared.
	var free bool
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&free); err != nil {
		return err
	}
	if free {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_unlock($1), pg_advisory_lock_shared($1)", key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO hilrig_rack_lease (rack, grp, holder, host, pid, since) VALUES ($1, $2, $3, $4, $5, now())
			ON CONFLICT (rack) DO UPDATE SET grp = $2, holder = $3, host = $4, pid = $5, since = now()`,
			rack, p.Group, holder, host, os.Getpid()); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	var (
		grp, who, whoHost string
		pid               int
		since             time.Time
	)
	err = tx.QueryRow(ctx, "SELECT grp, holder, host, pid, since FROM hilrig_rack_lease WHERE rack = $1", rack).Scan(&grp, &who, &whoHost, &pid, &since)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err == nil && p.Group != "" && grp == p.Group {
		// Join: every holder's lock is shared, so this does not wait.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", key); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	by := "another session (holder unknown)"
	if err == nil {
		by = fmt.Sprintf("%s (pid %d on %s) since %s", who, pid, whoHost, since.UTC().Format(time.RFC3339))
	}
	return &HeldError{Rack: rack, By: by, Store: Redact(p.DSN)}
}

// heldLease is a held lab-wide lease: its connection, pinged by watch.
type heldLease struct {
	mu   sync.Mutex // the connection is not safe for concurrent use
	conn *pgx.Conn
	rack string
	key  int64
	name string
	log  *slog.Logger
	lost error // set by watch when the session failed

	once       sync.Once
	stop, done chan struct{}
	relErr     error
}

// watch pings the session every heartbeat until release, so a lost lock
// (server restart, network cut) is logged when it happens rather than
// found at release.
func (h *heldLease) watch() {
	defer close(h.done)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		if h.lost == nil {
			ctx, cancel := context.WithTimeout(context.Background(), heartbeat)
			if err := h.conn.Ping(ctx); err != nil {
				h.lost = fmt.Errorf("lab-wide lease of rack %s lost at %s: %s: %w", h.rack, time.Now().UTC().Format(time.RFC3339), h.name, err)
				h.log.Error("rack lease lost: another controller may take the rack", "rack", h.rack, "err", h.lost)
			}
			cancel()
		}
		h.mu.Unlock()
	}
}

// release unlocks and closes the session; idempotent.
func (h *heldLease) release() error {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.mu.Lock()
		defer h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := h.lost
		if err == nil {
			if _, uerr := h.conn.Exec(ctx, "SELECT pg_advisory_unlock_shared($1)", h.key); uerr != nil {
				err = fmt.Errorf("lab-wide lease of rack %s: release: %s: %w", h.rack, h.name, uerr)
			}
		}
		h.relErr = errors.Join(err, h.conn.Close(ctx))
	})
	return h.relErr
}
