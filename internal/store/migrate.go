package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/migrations"
)

// MigrationResult is one migration applied or rolled back.
type MigrationResult struct {
	Version int64
	Source  string
	Up      bool
}

// Migrate applies every pending migration. Replicas starting together are
// serialised by a PostgreSQL advisory lock, so each migration runs once.
func Migrate(ctx context.Context, dsn string) ([]MigrationResult, error) {
	return withProvider(ctx, dsn, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		return p.Up(ctx)
	})
}

// MigrateDownTo rolls migrations back until version is the newest applied
// (0 removes the whole schema). Only the migration tests call it: no
// command does, and the pump never does.
func MigrateDownTo(ctx context.Context, dsn string, version int64) ([]MigrationResult, error) {
	return withProvider(ctx, dsn, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		return p.DownTo(ctx, version)
	})
}

// SchemaVersion reports the newest applied migration and the newest one the
// binary carries.
func SchemaVersion(ctx context.Context, dsn string) (current, latest int64, err error) {
	_, err = withProvider(ctx, dsn, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		current, err = p.GetDBVersion(ctx)
		if err != nil {
			return nil, err
		}
		sources := p.ListSources()
		if len(sources) > 0 {
			latest = sources[len(sources)-1].Version
		}
		return nil, nil
	})
	return current, latest, err
}

func withProvider(ctx context.Context, dsn string, run func(*goose.Provider) ([]*goose.MigrationResult, error)) ([]MigrationResult, error) {
	// The same care as Open: no message may quote a credential.
	if err := config.CheckDatabaseDSN(dsn); err != nil {
		return nil, fmt.Errorf("parse database DSN %s: %w", config.RedactDSN(dsn), err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, dsnError(dsn, "parse database DSN %s: %w", config.RedactDSN(dsn), parseReason(err))
	}
	db := stdlib.OpenDB(*cfg)
	defer func() { _ = db.Close() }()
	if err := db.PingContext(ctx); err != nil {
		return nil, dsnError(dsn, "connect to database %s/%s: %w", cfg.Host, cfg.Database, err)
	}
	provider, err := newProvider(db)
	if err != nil {
		return nil, err
	}
	results, err := run(provider)
	out := make([]MigrationResult, 0, len(results))
	for _, r := range results {
		if r == nil || r.Source == nil {
			continue
		}
		out = append(out, MigrationResult{Version: r.Source.Version, Source: r.Source.Path, Up: r.Direction == "up"})
	}
	if err != nil {
		var partial *goose.PartialError
		if errors.As(err, &partial) && partial.Failed != nil && partial.Failed.Source != nil {
			return out, fmt.Errorf("migration %s: %w", partial.Failed.Source.Path, partial.Err)
		}
		return out, fmt.Errorf("migrate: %w", err)
	}
	return out, nil
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}
