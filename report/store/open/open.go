// Package open opens the results store a configuration names: the
// `results` key of ginkgo.config (or a --results flag).
package open

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hilrig/hilrig/report/store"
	"github.com/hilrig/hilrig/report/store/postgres"
	"github.com/hilrig/hilrig/report/store/sqlite"
)

// DefaultFile is the SQLite file under report_dir used when `results` is
// empty.
const DefaultFile = "results.db"

// Off is the `results` value that disables the store.
const Off = "off"

// Describe returns what dsn names, redacted (for messages).
func Describe(dsn, reportDir string) string {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgres.Redact(dsn)
	case dsn == Off:
		return "off"
	}
	return "sqlite:" + sqlitePath(dsn, reportDir)
}

func sqlitePath(dsn, reportDir string) string {
	p := strings.TrimPrefix(dsn, "sqlite:")
	if p == "" {
		p = filepath.Join(reportDir, DefaultFile)
	}
	return p
}

// Open opens the store dsn names: "postgres://…" or "postgresql://…" for
// PostgreSQL, "sqlite:PATH" or a bare PATH for SQLite, empty for
// reportDir/results.db. "off" returns (nil, nil): no store. version names
// this hilrig build.
func Open(ctx context.Context, dsn, reportDir, version string) (store.Store, error) {
	switch {
	case dsn == Off:
		return nil, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s, err := postgres.Open(ctx, dsn, version, 0)
		if err != nil {
			return nil, err
		}
		return s, nil
	case strings.Contains(dsn, "://"):
		return nil, fmt.Errorf("%w: %q: want postgres://…, sqlite:PATH, a file path or %q", store.ErrDSN, dsn, Off)
	}
	s, err := sqlite.Open(ctx, sqlitePath(dsn, reportDir), version, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	return s, nil
}
