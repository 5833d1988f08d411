// Package sqlite is the embedded results store: one SQLite file (by
// default report_dir/results.db) through modernc.org/sqlite, which is pure
// Go, so the hilrig binary stays CGO-free.
//
// Several processes may write one file: writers take the file lock at
// the start of each transaction (BEGIN IMMEDIATE) and wait up to
// BusyTimeout for it; the journal is WAL, so readers never block writers.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/internal/sqlstore"
)

// BusyTimeout is how long a writer waits for another process's write
// transaction on the same file before failing.
const BusyTimeout = 10 * time.Second

// Options tune a SQLite store; the zero value is the production setting.
type Options struct {
	// MaxPageCount caps the database at this many pages (4 KiB each); 0 is
	// no cap. Tests use it to make a write fail the way a full disk does.
	MaxPageCount int
	// SchemaTarget migrates only up to this schema version (0: newest).
	SchemaTarget int
}

// Open opens (creating when missing) the SQLite store at path and brings
// its schema up to date. version names this hilrig build (written with
// the schema). Errors name the file: a file that is not a SQLite
// database, a corrupt one, or a schema from a newer hilrig
// (store.ErrNewerSchema) are refused without modifying it.
func Open(ctx context.Context, path, version string, o Options) (*sqlstore.Store, error) {
	name := "sqlite:" + path
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("%w: %s: want a file path without ? or #", store.ErrDSN, name)
	}
	q := fmt.Sprintf("?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-32768)",
		BusyTimeout.Milliseconds())
	if o.MaxPageCount > 0 {
		q += fmt.Sprintf("&_pragma=max_page_count(%d)", o.MaxPageCount)
	}
	db, err := sql.Open("sqlite", path+q)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", store.ErrStore, name, err)
	}
	d := sqlstore.Dialect{IDColumn: "INTEGER PRIMARY KEY", Explain: "EXPLAIN QUERY PLAN ", Classify: classify}
	target := o.SchemaTarget
	if target == 0 {
		target = sqlstore.Version
	}
	return sqlstore.OpenAt(ctx, db, d, name, version, target)
}

// SQLite primary result codes (sqlite3.h) worth a sentence.
const (
	codeBusy    = 5
	codeCorrupt = 11
	codeFull    = 13
	codeNotADB  = 26
	codeReadOnl = 8
	codeIOErr   = 10
	codeCantOpn = 14
)

func classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	var what string
	switch se.Code() & 0xff {
	case codeNotADB:
		what = "not a SQLite database (corrupt, or another kind of file); move it aside and `hilrig report import` the runs' result.json"
	case codeCorrupt:
		what = "database file is corrupt; move it aside and `hilrig report import` the runs' result.json"
	case codeFull:
		what = "disk full (or the database reached its size cap); the run is still in result.json"
	case codeBusy:
		what = fmt.Sprintf("locked by another process for over %v", BusyTimeout)
	case codeReadOnl, codeCantOpn:
		what = "cannot open or write the file (permissions, missing directory?)"
	case codeIOErr:
		what = "I/O error"
	default:
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
