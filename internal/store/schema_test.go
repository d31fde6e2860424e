package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

func TestDecideSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		current, known int64
		auto           bool
		want           store.SchemaAction
		wantErr        error
	}{
		{"same, auto", 11, 11, true, store.SchemaReady, nil},
		{"same, manual", 11, 11, false, store.SchemaReady, nil},
		{"older, auto", 10, 11, true, store.SchemaMigrate, nil},
		{"empty, auto", 0, 11, true, store.SchemaMigrate, nil},
		{"older, manual", 10, 11, false, store.SchemaRefuse, store.ErrSchemaTooOld},
		{"empty, manual", 0, 11, false, store.SchemaRefuse, store.ErrSchemaTooOld},
		{"newer, auto", 12, 11, true, store.SchemaRefuse, store.ErrSchemaTooNew},
		{"newer, manual", 12, 11, false, store.SchemaRefuse, store.ErrSchemaTooNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.DecideSchema(tc.current, tc.known, tc.auto)
			if got != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("DecideSchema(%d, %d, %v) = %v, %v; want %v, %v", tc.current, tc.known, tc.auto, got, err, tc.want, tc.wantErr)
			}
			var se *store.SchemaError
			if err != nil && (!errors.As(err, &se) || se.Current != tc.current || se.Known != tc.known) {
				t.Fatalf("error %v does not carry the versions %d and %d", err, tc.current, tc.known)
			}
		})
	}
}

// aheadOfBinary migrates a fresh database and records one migration newer
// than the binary carries, as a newer release would have applied it.
func aheadOfBinary(t *testing.T) (dsn string, known int64) {
	t.Helper()
	ctx := context.Background()
	dsn = pgtest.New(t)
	if _, err := store.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	_, known, err := store.SchemaVersion(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+1); err != nil {
		t.Fatal(err)
	}
	return dsn, known
}

func TestPrepareSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a newer schema is refused and left alone", func(t *testing.T) {
		t.Parallel()
		dsn, known := aheadOfBinary(t)
		for _, auto := range []bool{true, false} {
			v, err := store.PrepareSchema(ctx, dsn, auto)
			if !errors.Is(err, store.ErrSchemaTooNew) || v != known+1 {
				t.Fatalf("autoMigrate %v: got version %d, %v; want %d and ErrSchemaTooNew", auto, v, err, known+1)
			}
		}
		if cur, _, err := store.SchemaVersion(ctx, dsn); err != nil || cur != known+1 {
			t.Fatalf("schema after the refusal: %d, %v", cur, err)
		}
	})
	t.Run("an older schema without autoMigrate is refused and not migrated", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.New(t)
		v, err := store.PrepareSchema(ctx, dsn, false)
		if !errors.Is(err, store.ErrSchemaTooOld) || v != 0 {
			t.Fatalf("got version %d, %v; want 0 and ErrSchemaTooOld", v, err)
		}
		if n := tableCount(t, dsn); n != 0 {
			t.Fatalf("%d tables created on a refused database", n)
		}
	})
	t.Run("an older schema with autoMigrate is migrated", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.New(t)
		v, err := store.PrepareSchema(ctx, dsn, true)
		_, known, kerr := store.SchemaVersion(ctx, dsn)
		if err != nil || kerr != nil || v != known {
			t.Fatalf("got version %d, %v (%v); want %d", v, err, kerr, known)
		}
		if n := tableCount(t, dsn); n != len(allTables) {
			t.Fatalf("%d of %d tables after migrating", n, len(allTables))
		}
		// The current schema without autoMigrate is accepted as it is.
		if v, err := store.PrepareSchema(ctx, dsn, false); err != nil || v != known {
			t.Fatalf("current schema, autoMigrate false: %d, %v", v, err)
		}
	})
}
