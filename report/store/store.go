// Package store keeps the history of runs: every run's environment and
// cases (summary, encoded histogram, bounds, checks, verdict, notes,
// method) in a SQL database, so trends across commits, boards and months
// can be queried (Trend) and a baseline picked from history (Baseline).
//
// Two backends sit behind [Store]: an embedded SQLite file (the default,
// pure Go, so the hilrig binary stays CGO-free) and PostgreSQL for a lab
// where several racks write to one database. [Open] picks one from a DSN.
//
// A run is written in parts (one per suite process, or "import"): Begin
// marks a part incomplete, Put writes the part's cases and marks it
// complete in one transaction. A run killed midway therefore keeps every
// part that finished, and shows as incomplete. Runs are keyed by rack and
// run ID, so racks writing to one database at once never touch each
// other's rows.
//
// result.json stays the record of a run; the store is an index over runs.
// When the store is unavailable the run is still in result.json and
// `hilrig report import` loads it later.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
)

// Sentinel errors. Errors of a Store wrap one of these (or a driver
// error) and name the store (its redacted DSN).
var (
	// ErrNewerSchema marks a database whose schema was written by a newer
	// hilrig than this one; it is not modified.
	ErrNewerSchema = errors.New("results store: schema is newer than this hilrig")
	// ErrNotFound marks a run or baseline the store does not hold.
	ErrNotFound = errors.New("results store: not found")
	// ErrDSN marks a results DSN this build cannot open.
	ErrDSN = errors.New("results store: bad DSN")
	// ErrStore marks any other store failure (corrupt file, database
	// down, disk full); the wrapped driver error says which.
	ErrStore = errors.New("results store")
)

// Store is a results history. Implementations are safe for concurrent use
// by several goroutines and several processes (SQLite serialises writers
// with its file lock and a busy timeout; PostgreSQL with row-level upserts).
// Every method blocks on the database and honours ctx.
type Store interface {
	// Name is the store's redacted DSN (no password), for messages.
	Name() string
	// Begin records that part of the run (rack, ri.ID) has started: the run
	// exists from now on and is incomplete until every begun part is Put.
	Begin(ctx context.Context, ri report.RunInfo, part string) error
	// Put writes r's cases as part of the run (rack, r.Run.ID) and marks the
	// part complete, in one transaction: either every case of the part is
	// stored or none. A case already stored for the run (same suite and
	// name) is replaced. The run's environment is updated from r.Run.
	// Parts are named by suite (the harness does so); a begun part named
	// like the suite of any case in r is marked complete too, so
	// importing a run's result.json after a store outage completes the
	// suites it holds.
	Put(ctx context.Context, r *report.Result, part string) error
	// PutSoak stores the windows of a soak checkpoint (summaries) for the
	// stored run k, replacing windows of the same index and agent.
	PutSoak(ctx context.Context, k RunKey, lg *soak.Log) error
	// SoakWindows returns the stored windows of run k in index order.
	SoakWindows(ctx context.Context, k RunKey) ([]soak.Window, error)
	// Runs lists stored runs matching f, newest first.
	Runs(ctx context.Context, f Filter) ([]RunRow, error)
	// Load returns a stored run as a result (cases in stored order).
	Load(ctx context.Context, key RunKey) (*report.Result, error)
	// Points returns every stored case matching f, ordered by case key
	// then run start (oldest first): the raw material of a trend.
	Points(ctx context.Context, f Filter) ([]Point, error)
	// Close releases the database.
	Close() error
}

// RunKey identifies a run: its rack and its ID on that rack.
type RunKey struct{ Rack, ID string }

func (k RunKey) String() string { return k.Rack + "/" + k.ID }

// KeyOf returns the key a run is stored under: ri.Rack and ri.ID, or when
// ri has no ID (a result file from before IDs) its start time in UTC.
func KeyOf(ri report.RunInfo) RunKey {
	id := ri.ID
	if id == "" {
		id = ri.Start.UTC().Format("20060102T150405.000000000Z")
	}
	return RunKey{Rack: ri.Rack, ID: id}
}

// Filter selects runs and cases. Empty fields match everything.
type Filter struct {
	// Case matches a case key "suite/name" (or just the name) containing it.
	Case string
	// Board matches runs with a board of this name.
	Board string
	Rack  string
	// Middleware matches the case's transport ("shm-loan", "udp", ...);
	// a prefix matches ("shm" matches shm-copy and shm-loan).
	Middleware string
	// Revision matches runs whose git revision starts with it.
	Revision string
	// Branch matches runs made on this git branch (exactly); Tag runs
	// whose revision carried this git tag (exactly).
	Branch, Tag string
	// Since keeps runs that started at or after it.
	Since time.Time
	// Verdict keeps runs with this overall verdict.
	Verdict report.Verdict
	// CompleteOnly drops runs with an incomplete part.
	CompleteOnly bool
	// Limit caps the number of runs listed (Runs only); 0 means no cap.
	Limit int
}

// RunRow is one stored run as listed.
type RunRow struct {
	Key      RunKey
	Start    time.Time
	End      time.Time
	Revision string
	Branch   string
	Version  string
	Verdict  report.Verdict
	Cases    int
	// Incomplete lists parts begun and never put (a run killed midway).
	Incomplete []string
}

// Point is one case of one run, as a trend sees it. Latencies are in ns.
type Point struct {
	Run       RunKey
	Start     time.Time
	Revision  string
	Suite     string
	Name      string
	Transport string
	Verdict   report.Verdict
	Count     int64
	P50       int64
	P99       int64
	Max       int64
	Sent      int64
	Lost      int64
}

// Key is the case key "suite/name" (report.Case.Key).
func (p Point) Key() string { return p.Suite + "/" + p.Name }
