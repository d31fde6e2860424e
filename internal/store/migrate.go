package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
func Migrate(ctx context.Context, dsn string, opts ...ConnOption) ([]MigrationResult, error) {
	return withProvider(ctx, dsn, opts, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		return p.Up(ctx)
	})
}

// MigrateUpTo applies pending migrations up to version and no further.
// Only the migration tests call it, to write rows as an older schema had
// them before the newer migrations carry them over.
func MigrateUpTo(ctx context.Context, dsn string, version int64, opts ...ConnOption) ([]MigrationResult, error) {
	return withProvider(ctx, dsn, opts, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		return p.UpTo(ctx, version)
	})
}

// MigrateDownTo rolls migrations back until version is the newest applied
// (0 removes the whole schema). Only the migration tests call it: no
// command does, and the pump never does.
func MigrateDownTo(ctx context.Context, dsn string, version int64, opts ...ConnOption) ([]MigrationResult, error) {
	return withProvider(ctx, dsn, opts, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
		return p.DownTo(ctx, version)
	})
}

// SchemaVersion reports the newest applied migration and the newest one the
// binary carries.
func SchemaVersion(ctx context.Context, dsn string, opts ...ConnOption) (current, latest int64, err error) {
	_, err = withProvider(ctx, dsn, opts, func(p *goose.Provider) ([]*goose.MigrationResult, error) {
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

func withProvider(ctx context.Context, dsn string, opts []ConnOption, run func(*goose.Provider) ([]*goose.MigrationResult, error)) ([]MigrationResult, error) {
	// The same care as Open: no message may quote a credential.
	if err := config.CheckDatabaseDSN(dsn); err != nil {
		return nil, fmt.Errorf("parse database DSN %s: %w", config.RedactDSN(dsn), err)
	}
	cfg, err := parseConnConfig(dsn)
	if err != nil {
		return nil, dsnError(dsn, "parse database DSN %s: %w", config.RedactDSN(dsn), parseReason(err))
	}
	for _, o := range opts {
		o(&cfg.Config)
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

// ErrSchemaTooNew and ErrSchemaTooOld classify a *SchemaError: the
// database's schema is newer than the binary knows (an older binary during
// a rolling upgrade or after a rollback), or older than it needs while it
// may not migrate (database.autoMigrate false).
var (
	ErrSchemaTooNew = errors.New("database schema is newer than this binary knows")
	ErrSchemaTooOld = errors.New("database schema is older than this binary needs")
)

// SchemaError is a schema the pump refuses to run on. errors.Is matches
// ErrSchemaTooNew or ErrSchemaTooOld.
type SchemaError struct {
	// Current is the newest migration applied to the database; Known the
	// newest one the binary carries.
	Current, Known int64
	kind           error
}

func (e *SchemaError) Error() string {
	if errors.Is(e.kind, ErrSchemaTooNew) {
		return fmt.Sprintf("%s: the database is at version %d, this binary knows up to %d; "+
			"run a release that knows version %d (or roll the database back), never this one", e.kind, e.Current, e.Known, e.Current)
	}
	return fmt.Sprintf("%s: the database is at version %d, this binary needs %d and database.autoMigrate is false; "+
		"run `flightfeed migrate` (the chart's migration Job) first", e.kind, e.Current, e.Known)
}

// Is matches the sentinel of its kind.
func (e *SchemaError) Is(target error) bool { return target == e.kind }

// SchemaAction is what to do with a database before the pump may use it.
type SchemaAction int

const (
	// SchemaReady means the schema is exactly the binary's.
	SchemaReady SchemaAction = iota
	// SchemaMigrate means: apply the pending migrations, then check again.
	SchemaMigrate
	// SchemaRefuse means: do not run (the error says why).
	SchemaRefuse
)

// DecideSchema is the pure decision of CheckSchema: given the database's
// version, the binary's newest and whether migrating is allowed, what to
// do. The error is a *SchemaError when the answer is SchemaRefuse.
func DecideSchema(current, known int64, autoMigrate bool) (SchemaAction, error) {
	switch {
	case current > known:
		return SchemaRefuse, &SchemaError{Current: current, Known: known, kind: ErrSchemaTooNew}
	case current == known:
		return SchemaReady, nil
	case autoMigrate:
		return SchemaMigrate, nil
	default:
		return SchemaRefuse, &SchemaError{Current: current, Known: known, kind: ErrSchemaTooOld}
	}
}

// PrepareSchema makes sure the pump may run on the database at dsn and
// returns the schema version it runs on: it refuses a schema newer than
// the binary knows (*SchemaError, ErrSchemaTooNew) before touching it,
// applies pending migrations when autoMigrate is set and otherwise refuses
// an older one (ErrSchemaTooOld). The version is read again after
// migrating, so a newer release migrating meanwhile is refused too: the
// pump never runs on a schema other than its own.
func PrepareSchema(ctx context.Context, dsn string, autoMigrate bool, opts ...ConnOption) (int64, error) {
	current, known, err := SchemaVersion(ctx, dsn, opts...)
	if err != nil {
		return 0, err
	}
	action, err := DecideSchema(current, known, autoMigrate)
	switch action {
	case SchemaReady:
		return current, nil
	case SchemaRefuse:
		return current, err
	}
	if _, err := Migrate(ctx, dsn, opts...); err != nil {
		return current, err
	}
	if current, known, err = SchemaVersion(ctx, dsn, opts...); err != nil {
		return 0, err
	}
	if action, err := DecideSchema(current, known, false); action != SchemaReady {
		return current, err
	}
	return current, nil
}
