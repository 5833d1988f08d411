// Package sqlstore is the store.Store both backends share: one schema and
// one set of queries over database/sql, with the few dialect differences
// (placeholders, identity column, migration lock) in a Dialect.
package sqlstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/report/store"
)

// errNewer is store.ErrNewerSchema; kept local so migrate reads plainly.
var errNewer = store.ErrNewerSchema

// Dialect is what differs between the SQL backends.
type Dialect struct {
	// Dollar is true for $1-style placeholders (PostgreSQL), false for ?.
	Dollar bool
	// IDColumn is the auto-increment primary key column definition.
	IDColumn string
	// LockMigrations, when set, is run first in the migration transaction
	// to serialise migrations across processes.
	LockMigrations string
	// Explain is the statement prefix that returns a query's plan
	// ("EXPLAIN QUERY PLAN " for SQLite, "EXPLAIN " for PostgreSQL).
	Explain string
	// Classify adds a human reading to a driver error (e.g. "disk full");
	// it returns err unchanged when it has nothing to add.
	Classify func(error) error
}

// Store is store.Store over database/sql. Safe for concurrent use.
type Store struct {
	db      *sql.DB
	d       Dialect
	name    string
	version string // hilrig version written into the schema table
	// schema is the database's schema version once opened: Version,
	// except for the old schemas tests build with OpenAt, whose writes
	// leave out the columns a later migration added.
	schema int
}

// Open wraps db (already opened with the backend's driver), migrates its
// schema to Version and returns the store. name is the redacted DSN used
// in every error. version names this build (recorded with the schema).
// On error db is closed.
func Open(ctx context.Context, db *sql.DB, d Dialect, name, version string) (*Store, error) {
	return OpenAt(ctx, db, d, name, version, Version)
}

// OpenAt is Open migrating only up to schema version target (tests of
// migrations build old schemas with it).
func OpenAt(ctx context.Context, db *sql.DB, d Dialect, name, version string, target int) (*Store, error) {
	if d.Classify == nil {
		d.Classify = func(err error) error { return err }
	}
	s := &Store{db: db, d: d, name: name, version: version}
	if err := s.migrate(ctx, target); err != nil {
		db.Close()
		return nil, s.wrap("open", err)
	}
	return s, nil
}

// Name implements store.Store.
func (s *Store) Name() string { return s.name }

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

// DB returns the database (tests inspect and damage it).
func (s *Store) DB() *sql.DB { return s.db }

func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrNewerSchema) || errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("results store %s: %s: %w", s.name, op, err)
	}
	return fmt.Errorf("%w %s: %s: %w", store.ErrStore, s.name, op, s.d.Classify(err))
}

// rebind turns ? placeholders into $n for dialects that need it. The
// queries here have no ? inside string literals.
func (s *Store) rebind(q string) string {
	if !s.d.Dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func configHash(cfg string) string {
	if cfg == "" {
		return ""
	}
	h := sha256.Sum256([]byte(cfg))
	return hex.EncodeToString(h[:8])
}

// upsertRun creates or updates the run row of ri and returns its id. The
// run's span grows to cover every part; other fields take the latest
// non-empty value.
func (s *Store) upsertRun(ctx context.Context, tx *sql.Tx, ri report.RunInfo, notes []string) (int64, error) {
	k := store.KeyOf(ri)
	info := ri
	info.Boards = nil // in run_boards
	ij, err := json.Marshal(info)
	if err != nil {
		return 0, err
	}
	if notes == nil {
		notes = []string{}
	}
	nj, err := json.Marshal(notes)
	if err != nil {
		return 0, err
	}
	start, end := ri.Start.UnixNano(), ri.End.UnixNano()
	if ri.End.IsZero() || end < start {
		end = start
	}
	// git_branch exists from schema 3 on.
	branchCol, branchVal, branchSet := "", "", ""
	args := []any{k.Rack, k.ID, ri.Machine, ri.Kernel, ri.CPUModel, ri.CPUGovernor, ri.Version, ri.GitRevision}
	if s.schema >= 3 {
		branchCol, branchVal = " git_branch,", " ?,"
		branchSet = "git_branch = CASE WHEN excluded.git_branch <> '' THEN excluded.git_branch ELSE runs.git_branch END,"
		args = append(args, ri.GitBranch)
	}
	args = append(args, configHash(ri.Config), start, end, string(ij), string(nj))
	var id int64
	err = tx.QueryRowContext(ctx, s.rebind(`INSERT INTO runs (rack, run_id, machine, kernel, cpu_model, cpu_governor,
			hilrig_version, git_revision,`+branchCol+` config_hash, start_ns, end_ns, info_json, notes_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?,`+branchVal+` ?, ?, ?, ?, ?)
		ON CONFLICT (rack, run_id) DO UPDATE SET
			machine = CASE WHEN excluded.machine <> '' THEN excluded.machine ELSE runs.machine END,
			kernel = CASE WHEN excluded.kernel <> '' THEN excluded.kernel ELSE runs.kernel END,
			cpu_model = CASE WHEN excluded.cpu_model <> '' THEN excluded.cpu_model ELSE runs.cpu_model END,
			cpu_governor = CASE WHEN excluded.cpu_governor <> '' THEN excluded.cpu_governor ELSE runs.cpu_governor END,
			hilrig_version = CASE WHEN excluded.hilrig_version NOT IN ('', '(devel)') THEN excluded.hilrig_version ELSE runs.hilrig_version END,
			git_revision = CASE WHEN excluded.git_revision <> '' THEN excluded.git_revision ELSE runs.git_revision END,
			`+branchSet+`
			config_hash = CASE WHEN excluded.config_hash <> '' THEN excluded.config_hash ELSE runs.config_hash END,
			start_ns = CASE WHEN excluded.start_ns < runs.start_ns THEN excluded.start_ns ELSE runs.start_ns END,
			end_ns = CASE WHEN excluded.end_ns > runs.end_ns THEN excluded.end_ns ELSE runs.end_ns END,
			info_json = excluded.info_json,
			notes_json = CASE WHEN excluded.notes_json <> '[]' THEN excluded.notes_json ELSE runs.notes_json END
		RETURNING id`), args...).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", k, err)
	}
	if s.schema < 3 {
		ri.GitTags = nil // no run_tags table yet
	}
	for _, tag := range ri.GitTags {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO run_tags (run, tag) VALUES (?, ?) ON CONFLICT (run, tag) DO NOTHING`),
			id, tag); err != nil {
			return 0, fmt.Errorf("run %s tag %s: %w", k, tag, err)
		}
	}
	for _, b := range ri.Boards {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO run_boards (run, name, kernel, cpu_model, cpu_governor, agent_version)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (run, name) DO UPDATE SET
				kernel = CASE WHEN excluded.kernel <> '' THEN excluded.kernel ELSE run_boards.kernel END,
				cpu_model = CASE WHEN excluded.cpu_model <> '' THEN excluded.cpu_model ELSE run_boards.cpu_model END,
				cpu_governor = CASE WHEN excluded.cpu_governor <> '' THEN excluded.cpu_governor ELSE run_boards.cpu_governor END,
				agent_version = CASE WHEN excluded.agent_version <> '' THEN excluded.agent_version ELSE run_boards.agent_version END`),
			id, b.Name, b.Kernel, b.CPUModel, b.CPUGovernor, b.AgentVersion); err != nil {
			return 0, fmt.Errorf("run %s board %s: %w", k, b.Name, err)
		}
	}
	return id, nil
}

// PutSoak implements store.Store: one row per window and agent
// (summaries only; the checkpoint file keeps the histograms).
func (s *Store) PutSoak(ctx context.Context, k store.RunKey, lg *soak.Log) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT id FROM runs WHERE rack = ? AND run_id = ?`), k.Rack, k.ID).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO soak_windows (run, idx, stream, start_ns, window_json)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (run, idx, stream) DO UPDATE SET start_ns = excluded.start_ns, window_json = excluded.window_json`))
		if err != nil {
			return err
		}
		defer ins.Close()
		for _, w := range lg.Windows {
			for _, a := range w.Agents {
				for i := range a.Streams {
					a.Streams[i].Histogram = nil
				}
				wj, err := json.Marshal(soak.Window{Index: w.Index, Start: w.Start, End: w.End, Agents: []soak.AgentWindow{a}})
				if err != nil {
					return err
				}
				if _, err := ins.ExecContext(ctx, id, w.Index, a.Agent, w.Start.UnixNano(), string(wj)); err != nil {
					return fmt.Errorf("window %d agent %s: %w", w.Index, a.Agent, err)
				}
			}
		}
		return nil
	})
	return s.wrap(fmt.Sprintf("put soak windows of run %s", k), err)
}

// SoakWindows implements store.Store.
func (s *Store) SoakWindows(ctx context.Context, k store.RunKey) ([]soak.Window, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT w.window_json FROM soak_windows w JOIN runs r ON r.id = w.run
		WHERE r.rack = ? AND r.run_id = ? ORDER BY w.idx, w.stream`), k.Rack, k.ID)
	if err != nil {
		return nil, s.wrap("soak windows of run "+k.String(), err)
	}
	defer rows.Close()
	var out []soak.Window
	for rows.Next() {
		var wj string
		if err := rows.Scan(&wj); err != nil {
			return nil, s.wrap("soak windows of run "+k.String(), err)
		}
		var w soak.Window
		if err := json.Unmarshal([]byte(wj), &w); err != nil {
			return nil, s.wrap("soak windows of run "+k.String(), err)
		}
		if n := len(out); n > 0 && out[n-1].Index == w.Index {
			out[n-1].Agents = append(out[n-1].Agents, w.Agents...)
			continue
		}
		out = append(out, w)
	}
	return out, s.wrap("soak windows of run "+k.String(), rows.Err())
}

// Begin implements store.Store.
func (s *Store) Begin(ctx context.Context, ri report.RunInfo, part string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		id, err := s.upsertRun(ctx, tx, ri, nil)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO run_parts (run, part, complete, begun_ns) VALUES (?, ?, 0, ?)
			ON CONFLICT (run, part) DO NOTHING`), id, part, time.Now().UnixNano())
		return err
	})
	return s.wrap(fmt.Sprintf("begin run %s part %s", store.KeyOf(ri), part), err)
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, r *report.Result, part string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		id, err := s.upsertRun(ctx, tx, r.Run, r.Notes)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(MAX(seq), 0) FROM cases WHERE run = ?`), id).Scan(&seq); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO cases (run, suite, name, seq, part, transport, payload_bytes,
				verdict, count, p50, p99, max, sent, lost)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run, suite, name) DO UPDATE SET part = excluded.part, transport = excluded.transport,
				payload_bytes = excluded.payload_bytes, verdict = excluded.verdict, count = excluded.count,
				p50 = excluded.p50, p99 = excluded.p99, max = excluded.max, sent = excluded.sent,
				lost = excluded.lost`))
		if err != nil {
			return err
		}
		defer ins.Close()
		doc, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO case_docs (run, suite, name, case_json) VALUES (?, ?, ?, ?)
			ON CONFLICT (run, suite, name) DO UPDATE SET case_json = excluded.case_json`))
		if err != nil {
			return err
		}
		defer doc.Close()
		for i := range r.Cases {
			c := &r.Cases[i]
			cj, err := json.Marshal(c)
			if err != nil {
				return fmt.Errorf("case %s: %w", c.Key(), err)
			}
			sm := c.Summary
			if c.Histogram != nil && sm.Count == 0 {
				sm = c.Histogram.Summary()
			}
			seq++
			if _, err := ins.ExecContext(ctx, id, c.Suite, c.Name, seq, part, c.Transport, c.PayloadBytes, string(c.Verdict),
				sm.Count, sm.P50, sm.P99, sm.Max, c.Sent, c.Lost); err != nil {
				return fmt.Errorf("case %s: %w", c.Key(), err)
			}
			if _, err := doc.ExecContext(ctx, id, c.Suite, c.Name, string(cj)); err != nil {
				return fmt.Errorf("case %s: %w", c.Key(), err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO run_parts (run, part, complete, begun_ns) VALUES (?, ?, 1, ?)
			ON CONFLICT (run, part) DO UPDATE SET complete = 1`), id, part, time.Now().UnixNano()); err != nil {
			return err
		}
		// A begun part named like a suite whose cases this Put holds is
		// complete too: importing result.json after the store failed
		// mid-run (down, full) finishes the parts the file holds, while a
		// suite killed before its report (no cases in the file) stays
		// incomplete.
		done := map[string]bool{}
		for i := range r.Cases {
			if sn := r.Cases[i].Suite; sn != part && !done[sn] {
				done[sn] = true
				if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE run_parts SET complete = 1 WHERE run = ? AND part = ? AND complete = 0`),
					id, sn); err != nil {
					return err
				}
			}
		}
		_, err = tx.ExecContext(ctx, s.rebind(`UPDATE runs SET verdict = CASE
				WHEN EXISTS (SELECT 1 FROM cases WHERE run = ? AND verdict = 'fail') THEN 'fail'
				WHEN EXISTS (SELECT 1 FROM cases WHERE run = ? AND verdict = 'pass') THEN 'pass'
				ELSE 'no-bounds' END
			WHERE id = ?`), id, id, id)
		return err
	})
	return s.wrap(fmt.Sprintf("put run %s part %s (%d cases)", store.KeyOf(r.Run), part, len(r.Cases)), err)
}

func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// where builds the WHERE clause of f over runs r (and cases c when
// withCases).
func (s *Store) where(f store.Filter, withCases bool) (string, []any) {
	var cl []string
	var args []any
	add := func(c string, a ...any) { cl = append(cl, c); args = append(args, a...) }
	if f.Rack != "" {
		add("r.rack = ?", f.Rack)
	}
	if f.Revision != "" {
		add("r.git_revision LIKE ?", likePrefix(f.Revision))
	}
	if !f.Since.IsZero() {
		add("r.start_ns >= ?", f.Since.UnixNano())
	}
	if f.Verdict != "" {
		add("r.verdict = ?", string(f.Verdict))
	}
	if f.Branch != "" {
		add("r.git_branch = ?", f.Branch)
	}
	if f.Tag != "" {
		// IN, not a correlated EXISTS: SQLite then drives the query from
		// the tag's index entries instead of probing it once per run.
		add("r.id IN (SELECT t.run FROM run_tags t WHERE t.tag = ?)", f.Tag)
	}
	if f.Board != "" {
		add("EXISTS (SELECT 1 FROM run_boards b WHERE b.run = r.id AND b.name = ?)", f.Board)
	}
	if f.CompleteOnly {
		add("NOT EXISTS (SELECT 1 FROM run_parts p WHERE p.run = r.id AND p.complete = 0)")
	}
	if withCases {
		if f.Case != "" {
			add("(c.suite || '/' || c.name) LIKE ?", "%"+likeEscape(f.Case)+"%")
		}
		if f.Middleware != "" {
			add("c.transport LIKE ?", likePrefix(f.Middleware))
		}
	}
	if len(cl) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(cl, " AND "), args
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func likePrefix(s string) string { return likeEscape(s) + "%" }

// runsQuery is the query Runs sends for f.
func (s *Store) runsQuery(f store.Filter) (string, []any) {
	w, args := s.where(f, false)
	w = strings.ReplaceAll(w, "LIKE ?", `LIKE ? ESCAPE '\'`)
	q := `SELECT r.id, r.rack, r.run_id, r.start_ns, r.end_ns, r.git_revision, r.git_branch, r.hilrig_version, r.verdict,
			(SELECT COUNT(*) FROM cases c WHERE c.run = r.id)
		FROM runs r` + w + ` ORDER BY r.start_ns DESC, r.id DESC`
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return q, args
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, f store.Filter) ([]store.RunRow, error) {
	q, args := s.runsQuery(f)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, s.wrap("list runs", err)
	}
	defer rows.Close()
	var out []store.RunRow
	var ids []int64
	for rows.Next() {
		var rr store.RunRow
		var id, st, en int64
		var v string
		if err := rows.Scan(&id, &rr.Key.Rack, &rr.Key.ID, &st, &en, &rr.Revision, &rr.Branch, &rr.Version, &v, &rr.Cases); err != nil {
			return nil, s.wrap("list runs", err)
		}
		rr.Start, rr.End, rr.Verdict = time.Unix(0, st).UTC(), time.Unix(0, en).UTC(), report.Verdict(v)
		out = append(out, rr)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list runs", err)
	}
	rows.Close()
	for i, id := range ids {
		inc, err := s.incomplete(ctx, id)
		if err != nil {
			return nil, s.wrap("list runs", err)
		}
		out[i].Incomplete = inc
	}
	return out, nil
}

func (s *Store) incomplete(ctx context.Context, id int64) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT part FROM run_parts WHERE run = ? AND complete = 0 ORDER BY part`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, rows.Err()
}

// Load implements store.Store. A run with incomplete parts loads with a
// note saying which.
func (s *Store) Load(ctx context.Context, k store.RunKey) (*report.Result, error) {
	op := "load run " + k.String()
	var id int64
	var ij, nj string
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT id, info_json, notes_json FROM runs WHERE rack = ? AND run_id = ?`), k.Rack, k.ID).Scan(&id, &ij, &nj)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.wrap(op, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	r := report.NewResult(report.RunInfo{})
	if err := json.Unmarshal([]byte(ij), &r.Run); err != nil {
		return nil, s.wrap(op, fmt.Errorf("run info: %w", err))
	}
	if err := json.Unmarshal([]byte(nj), &r.Notes); err != nil {
		return nil, s.wrap(op, fmt.Errorf("run notes: %w", err))
	}
	if err := s.loadBoards(ctx, id, r); err != nil {
		return nil, s.wrap(op, err)
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT d.case_json FROM cases c JOIN case_docs d ON d.run = c.run AND d.suite = c.suite AND d.name = c.name
		WHERE c.run = ? ORDER BY c.seq`), id)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var cj string
		if err := rows.Scan(&cj); err != nil {
			return nil, s.wrap(op, err)
		}
		var c report.Case
		if err := json.Unmarshal([]byte(cj), &c); err != nil {
			return nil, s.wrap(op, fmt.Errorf("case: %w", err))
		}
		r.Cases = append(r.Cases, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	inc, err := s.incomplete(ctx, id)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if len(inc) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("run incomplete: part(s) %s began and never finished", strings.Join(inc, ", ")))
	}
	return r, nil
}

func (s *Store) loadBoards(ctx context.Context, id int64, r *report.Result) error {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT name, kernel, cpu_model, cpu_governor, agent_version FROM run_boards WHERE run = ? ORDER BY name`), id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b report.BoardInfo
		if err := rows.Scan(&b.Name, &b.Kernel, &b.CPUModel, &b.CPUGovernor, &b.AgentVersion); err != nil {
			return err
		}
		r.Run.Boards = append(r.Run.Boards, b)
	}
	return rows.Err()
}

// Points implements store.Store. The runs matching f are read first and
// the cases joined to them in Go, unordered from the database and sorted
// here: SQLite's sorter over 86,000 wide rows took seconds, Go's takes
// milliseconds, and each run's strings are read once instead of per case.
func (s *Store) Points(ctx context.Context, f store.Filter) ([]store.Point, error) {
	runsQ, rargs, casesQ, cargs := s.pointsQueries(f)
	type runInfo struct {
		key      store.RunKey
		start    int64
		revision string
	}
	runs := map[int64]*runInfo{}
	rows, err := s.db.QueryContext(ctx, s.rebind(runsQ), rargs...)
	if err != nil {
		return nil, s.wrap("trend query", err)
	}
	for rows.Next() {
		ri := &runInfo{}
		var id int64
		if err := rows.Scan(&id, &ri.key.Rack, &ri.key.ID, &ri.start, &ri.revision); err != nil {
			rows.Close()
			return nil, s.wrap("trend query", err)
		}
		runs[id] = ri
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap("trend query", err)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	rows, err = s.db.QueryContext(ctx, s.rebind(casesQ), cargs...)
	if err != nil {
		return nil, s.wrap("trend query", err)
	}
	defer rows.Close()
	intern := map[string]string{}
	str := func(b []byte) string {
		if v, ok := intern[string(b)]; ok {
			return v
		}
		v := string(b)
		intern[v] = v
		return v
	}
	var out []store.Point
	var suite, name, tr, v sql.RawBytes
	// Numbers scan into any: database/sql converts int64 into *int64
	// through reflection, which at 6 numbers × 86,000 rows was most of
	// the query's time.
	var num [7]any
	for rows.Next() {
		var p store.Point
		if err := rows.Scan(&num[0], &suite, &name, &tr, &v, &num[1], &num[2], &num[3], &num[4], &num[5], &num[6]); err != nil {
			return nil, s.wrap("trend query", err)
		}
		var ints [7]int64
		for k, x := range num {
			n, err := asInt64(x)
			if err != nil {
				return nil, s.wrap("trend query", err)
			}
			ints[k] = n
		}
		id := ints[0]
		p.Count, p.P50, p.P99, p.Max, p.Sent, p.Lost = ints[1], ints[2], ints[3], ints[4], ints[5], ints[6]
		ri, ok := runs[id]
		if !ok {
			continue // a run stored after the runs query
		}
		p.Run, p.Start, p.Revision = ri.key, time.Unix(0, ri.start).UTC(), ri.revision
		p.Suite, p.Name, p.Transport, p.Verdict = str(suite), str(name), str(tr), report.Verdict(str(v))
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("trend query", err)
	}
	slices.SortFunc(out, func(a, b store.Point) int {
		if c := cmp.Compare(a.Suite, b.Suite); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Run.String(), b.Run.String())
	})
	return out, nil
}

// pointsQueries are the two queries Points sends for f: the matching
// runs, then their matching cases.
func (s *Store) pointsQueries(f store.Filter) (runsQ string, rargs []any, casesQ string, cargs []any) {
	rw, rargs := s.where(store.Filter{Rack: f.Rack, Revision: f.Revision, Branch: f.Branch, Tag: f.Tag, Since: f.Since,
		Verdict: f.Verdict, Board: f.Board, CompleteOnly: f.CompleteOnly}, false)
	rw = strings.ReplaceAll(rw, "LIKE ?", `LIKE ? ESCAPE '\'`)
	runsQ = `SELECT r.id, r.rack, r.run_id, r.start_ns, r.git_revision FROM runs r` + rw
	// With run filters the cases are joined to the matching runs, so the
	// planner walks those runs by index and each run's cases by the
	// cases primary key (run, ...); "c.run IN (subquery)" made SQLite
	// scan every case through a bloom filter instead.
	from := " FROM cases c"
	var cl []string
	if rw != "" {
		from = " FROM runs r JOIN cases c ON c.run = r.id"
		cl = append(cl, strings.TrimPrefix(rw, " WHERE "))
		cargs = append(cargs, rargs...)
	}
	if f.Case != "" {
		cl = append(cl, `(c.suite || '/' || c.name) LIKE ? ESCAPE '\'`)
		cargs = append(cargs, "%"+likeEscape(f.Case)+"%")
	}
	if f.Middleware != "" {
		cl = append(cl, `c.transport LIKE ? ESCAPE '\'`)
		cargs = append(cargs, likePrefix(f.Middleware))
	}
	casesQ = `SELECT c.run, c.suite, c.name, c.transport, c.verdict, c.count, c.p50, c.p99, c.max, c.sent, c.lost` + from
	if len(cl) > 0 {
		casesQ += " WHERE " + strings.Join(cl, " AND ")
	}
	return runsQ, rargs, casesQ, cargs
}

// Explain returns the database's plans for the queries Runs and Points
// send for f, one text per query ("runs", "points-runs",
// "points-cases"), each plan's lines joined by newlines: to check that
// the indexes serve them (tests, and a lab diagnosing a slow store).
func (s *Store) Explain(ctx context.Context, f store.Filter) (map[string]string, error) {
	rq, ra := s.runsQuery(f)
	prq, pra, pcq, pca := s.pointsQueries(f)
	out := map[string]string{}
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{"runs": {rq, ra}, "points-runs": {prq, pra}, "points-cases": {pcq, pca}} {
		rows, err := s.db.QueryContext(ctx, s.rebind(s.d.Explain+q.sql), q.args...)
		if err != nil {
			return nil, s.wrap("explain "+name, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return nil, s.wrap("explain "+name, err)
		}
		var lines []string
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, s.wrap("explain "+name, err)
			}
			// SQLite: id, parent, notused, detail; PostgreSQL: one text
			// column. The last column is the readable one in both.
			lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.wrap("explain "+name, err)
		}
		out[name] = strings.Join(lines, "\n")
	}
	return out, nil
}

// asInt64 reads an integer column scanned into any (drivers return int64;
// some return int32 or a decimal string).
func asInt64(x any) (int64, error) {
	switch v := x.(type) {
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case int:
		return int64(v), nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("integer column holds %T", x)
}
