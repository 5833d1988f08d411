package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Version is the newest schema version this build writes and reads.
const Version = 3

// migrations[i] takes the schema from version i to i+1. {{ID}} is the
// dialect's auto-increment primary key column type. Never edit a released
// migration: append a new one and bump Version.
var migrations = [][]string{
	// 0 → 1: runs, their parts (the incomplete mark), boards and cases.
	{
		`CREATE TABLE runs (
			id {{ID}},
			rack TEXT NOT NULL,
			run_id TEXT NOT NULL,
			machine TEXT NOT NULL DEFAULT '',
			kernel TEXT NOT NULL DEFAULT '',
			cpu_model TEXT NOT NULL DEFAULT '',
			cpu_governor TEXT NOT NULL DEFAULT '',
			hilrig_version TEXT NOT NULL DEFAULT '',
			git_revision TEXT NOT NULL DEFAULT '',
			config_hash TEXT NOT NULL DEFAULT '',
			start_ns BIGINT NOT NULL,
			end_ns BIGINT NOT NULL,
			verdict TEXT NOT NULL DEFAULT 'no-bounds',
			info_json TEXT NOT NULL,
			notes_json TEXT NOT NULL DEFAULT '[]',
			UNIQUE (rack, run_id))`,
		`CREATE INDEX runs_start ON runs (start_ns)`,
		`CREATE TABLE run_parts (
			run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			part TEXT NOT NULL,
			complete INTEGER NOT NULL,
			begun_ns BIGINT NOT NULL,
			PRIMARY KEY (run, part))`,
		`CREATE TABLE run_boards (
			run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			name TEXT NOT NULL,
			kernel TEXT NOT NULL DEFAULT '',
			cpu_model TEXT NOT NULL DEFAULT '',
			cpu_governor TEXT NOT NULL DEFAULT '',
			agent_version TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (run, name))`,
		`CREATE TABLE cases (
			run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			suite TEXT NOT NULL,
			name TEXT NOT NULL,
			seq INTEGER NOT NULL,
			part TEXT NOT NULL,
			transport TEXT NOT NULL DEFAULT '',
			payload_bytes BIGINT NOT NULL DEFAULT 0,
			verdict TEXT NOT NULL,
			count BIGINT NOT NULL,
			p50 BIGINT NOT NULL,
			p99 BIGINT NOT NULL,
			max BIGINT NOT NULL,
			sent BIGINT NOT NULL,
			lost BIGINT NOT NULL,
			PRIMARY KEY (run, suite, name))`,
		`CREATE INDEX cases_key ON cases (suite, name)`,
		// The full case (histogram, bounds, checks, notes) apart from the
		// columns trends scan, so a trend over 1,000 runs reads ~100 bytes
		// a case instead of kilobytes.
		`CREATE TABLE case_docs (
			run BIGINT NOT NULL,
			suite TEXT NOT NULL,
			name TEXT NOT NULL,
			case_json TEXT NOT NULL,
			PRIMARY KEY (run, suite, name),
			FOREIGN KEY (run, suite, name) REFERENCES cases (run, suite, name) ON DELETE CASCADE)`,
	},
	// 1 → 2: soak windows, one row per checkpoint window and stream.
	{
		`CREATE TABLE soak_windows (
			run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			idx INTEGER NOT NULL,
			stream TEXT NOT NULL,
			start_ns BIGINT NOT NULL,
			window_json TEXT NOT NULL,
			PRIMARY KEY (run, idx, stream))`,
	},
	// 2 → 3: the git branch and tags of a run, so a baseline can be "the
	// last passing run of branch B / tag T". Runs stored before have no
	// branch and no tags (their result.json had none to give).
	{
		`ALTER TABLE runs ADD COLUMN git_branch TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX runs_branch ON runs (git_branch, start_ns)`,
		`CREATE TABLE run_tags (
			run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			tag TEXT NOT NULL,
			PRIMARY KEY (run, tag))`,
		`CREATE INDEX run_tags_tag ON run_tags (tag, run)`,
	},
}

// migrate brings the schema to target (Version outside tests) in one
// transaction under the dialect's migration lock, so processes opening
// the store at once migrate it once. A schema newer than this build is
// an error wrapping errNewer and is left untouched.
func (s *Store) migrate(ctx context.Context, target int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.LockMigrations != "" {
		if _, err := tx.ExecContext(ctx, s.d.LockMigrations); err != nil {
			return fmt.Errorf("lock schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS hilrig_schema (version INTEGER NOT NULL, written_by TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("schema table: %w", err)
	}
	var cur int
	var by string
	switch err := tx.QueryRowContext(ctx, `SELECT version, written_by FROM hilrig_schema`).Scan(&cur, &by); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO hilrig_schema (version, written_by) VALUES (0, ?)`), s.version); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	}
	if cur > Version {
		return fmt.Errorf("%w: schema version %d (written by %s), this hilrig reads up to %d; upgrade hilrig",
			errNewer, cur, by, Version)
	}
	for v := cur; v < target; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, strings.ReplaceAll(stmt, "{{ID}}", s.d.IDColumn)); err != nil {
				return fmt.Errorf("migrate schema %d→%d: %w", v, v+1, err)
			}
		}
	}
	if target > cur {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE hilrig_schema SET version = ?, written_by = ?`), target, s.version); err != nil {
			return err
		}
	}
	s.schema = max(cur, target)
	return tx.Commit()
}
