package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Filter selects flights for a consistent read; the zero value is all.
type Filter struct {
	// FLID, when set, selects one flight.
	FLID *flight.FLID
	// Day, when set ("YYYY-MM-DD"), selects that operation day's flights.
	Day string
}

func (f Filter) predicate() (string, []any) {
	switch {
	case f.FLID != nil && f.Day != "":
		return "flid = $1 AND operation_day = $2::date", []any{int64(*f.FLID), f.Day} //nolint:gosec // 12 digits
	case f.FLID != nil:
		return "flid = $1", []any{int64(*f.FLID)} //nolint:gosec // 12 digits
	case f.Day != "":
		return "operation_day = $1::date", []any{f.Day}
	default:
		return "true", nil
	}
}

// ReadFlights returns the full states selected by f, sorted by FLID: main
// rows and every child table read in one REPEATABLE READ READ ONLY
// transaction, in one round trip (seed 000 §9), so no flight is ever seen
// half-written.
func (s *Store) ReadFlights(ctx context.Context, f Filter) ([]flight.State, error) {
	var out []flight.State
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		pred, args := f.predicate()
		var err error
		out, err = loadStates(ctx, tx, pred, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read flights: %w", err)
	}
	return out, nil
}

// LedgerDay is one operation day of the snapshot ledger.
type LedgerDay struct {
	Day           string    `json:"day"`
	Version       int64     `json:"version"`
	LastMessageID int64     `json:"last_message_id"`
	Flights       int64     `json:"flights"`
	LastCommitAt  time.Time `json:"-"`
}

// Ledger returns every day of the ledger, ascending, with its roster size.
func (s *Store) Ledger(ctx context.Context) ([]LedgerDay, error) {
	var out []LedgerDay
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT g.operation_day::text, g.version, g.last_message_id, g.last_recv_at,
				(SELECT count(*) FROM schd_gen_flid r WHERE r.operation_day = g.operation_day)
			FROM schd_gen g ORDER BY g.operation_day`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LedgerDay, error) {
			var d LedgerDay
			err := row.Scan(&d.Day, &d.Version, &d.LastMessageID, &d.LastCommitAt, &d.Flights)
			return d, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return out, nil
}

func (s *Store) readOnly(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
