package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// Filter selects flights for a consistent read; the zero value is all.
// Every condition is a SQL predicate: only the selected rows leave the
// database.
type Filter struct {
	// FLID, when set, selects one flight.
	FLID *flight.FLID
	// Day, when set ("YYYY-MM-DD"), selects that operation day's flights.
	Day string
	// UpdatedSince, when not zero, selects the flights updated at or after
	// it (updated_at >= UpdatedSince, to the nanosecond: updated_at has
	// microseconds, so a bound between two microseconds rounds up).
	UpdatedSince time.Time
	// After, when set, selects the FLIDs greater than it: the keyset of a
	// page, the last FLID of the page before.
	After *flight.FLID
	// Limit, when positive, keeps the Limit lowest FLIDs selected: one
	// page (ask for one more than the page size to learn whether another
	// page follows).
	Limit int
}

// predicate is f's WHERE clause (without Limit) and its arguments, $1 on.
func (f Filter) predicate() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.FLID != nil {
		add("flid = $%d", int64(*f.FLID)) //nolint:gosec // 12 digits
	}
	if f.Day != "" {
		add("operation_day = $%d::date", f.Day)
	}
	if !f.UpdatedSince.IsZero() {
		add("updated_at >= $%d", ceilMicrosecond(f.UpdatedSince))
	}
	if f.After != nil {
		add("flid > $%d", int64(*f.After)) //nolint:gosec // 12 digits
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// ceilMicrosecond rounds t up to PostgreSQL's resolution: a timestamp of
// whole microseconds is at or after t exactly when it is at or after the
// rounded bound (the driver would truncate the nanoseconds instead).
func ceilMicrosecond(t time.Time) time.Time {
	if t.Nanosecond()%int(time.Microsecond) == 0 {
		return t
	}
	return t.Truncate(time.Microsecond).Add(time.Microsecond)
}

// ReadFlights returns the full states selected by f, sorted by FLID: main
// rows and every child table read in one REPEATABLE READ READ ONLY
// transaction, so no flight is ever seen half-written. With f.Limit only
// that many flights are read: their main rows first, then every child
// table for just those FLIDs, in one batch.
func (s *Store) ReadFlights(ctx context.Context, f Filter) ([]flight.State, error) {
	var out []flight.State
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = readFiltered(ctx, tx, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read flights: %w", err)
	}
	return out, nil
}

// EachFlight calls fn with every flight f selects, in FLID order, reading
// pageSize flights at a time (keyset pages: FLID > the last one read) in one
// REPEATABLE READ READ ONLY transaction: one consistent snapshot, however
// many pages, and memory for one page. f.After and f.Limit are EachFlight's
// own; an error of fn stops the read and is returned as is.
func (s *Store) EachFlight(ctx context.Context, f Filter, pageSize int, fn func(flight.State) error) error {
	if pageSize < 1 {
		return fmt.Errorf("read flights: page size %d, must be at least 1", pageSize)
	}
	var fnErr error
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		f.After, f.Limit = nil, pageSize
		for {
			states, err := readFiltered(ctx, tx, f)
			if err != nil {
				return err
			}
			for _, st := range states {
				if fnErr = fn(st); fnErr != nil {
					return fnErr
				}
			}
			if len(states) < pageSize {
				return nil
			}
			last := states[len(states)-1].FLID
			f.After = &last
		}
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("read flights: %w", err)
	}
	return nil
}

// readFiltered reads the states f selects inside tx.
func readFiltered(ctx context.Context, tx pgx.Tx, f Filter) ([]flight.State, error) {
	pred, args := f.predicate()
	if f.Limit <= 0 {
		return loadStates(ctx, tx, pred, args...)
	}
	return loadPage(ctx, tx, pred, f.Limit, args...)
}

// LedgerDay is one operation day of the snapshot ledger.
type LedgerDay struct {
	Day           string    `json:"day"`
	Version       int64     `json:"version"`
	LastMessageID int64     `json:"last_message_id"`
	Flights       int64     `json:"flights"`
	LastCommitAt  time.Time `json:"-"`
	// Held is why ledger retention would keep the day were it past its
	// cutoff ("REASON: detail", processing rules R8.3; "" when nothing would): a
	// flight of it still in current state, or a message that concerns it
	// unfinished or not yet written back. Not part of `flightfeed ledger`.
	Held string `json:"-"`
	// Verification is the day's last verification (`flightfeed verify`),
	// nil when none ran. Not part of `flightfeed ledger`.
	Verification *verify.Record `json:"-"`
}

// Ledger returns every day of the ledger, ascending, with its roster size
// and what would hold it past retention.
func (s *Store) Ledger(ctx context.Context) ([]LedgerDay, error) {
	var out []LedgerDay
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH `+ledgerHolds+`
			SELECT g.operation_day::text, g.version, g.last_message_id, g.last_recv_at,
				(SELECT count(*) FROM schd_gen_flid r WHERE r.operation_day = g.operation_day),
				coalesce(h.held, ''),
				v.outcome, v.flights, v.differing, v.messages, v.reason, v.started_at, v.finished_at, v.ran_by
			FROM schd_gen g LEFT JOIN held h ON h.day = g.operation_day
				LEFT JOIN day_verification v ON v.operation_day = g.operation_day
			ORDER BY g.operation_day`, "infinity")
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LedgerDay, error) {
			var d LedgerDay
			var v struct {
				outcome, reason, ranBy       *string
				flights, differing, messages *int
				started, finished            *time.Time
			}
			err := row.Scan(&d.Day, &d.Version, &d.LastMessageID, &d.LastCommitAt, &d.Flights, &d.Held,
				&v.outcome, &v.flights, &v.differing, &v.messages, &v.reason, &v.started, &v.finished, &v.ranBy)
			if err == nil && v.outcome != nil {
				d.Verification = &verify.Record{Day: d.Day, Outcome: *v.outcome, Flights: *v.flights, Differing: *v.differing,
					Messages: *v.messages, Reason: *v.reason, StartedAt: *v.started, FinishedAt: *v.finished, RanBy: *v.ranBy}
			}
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
