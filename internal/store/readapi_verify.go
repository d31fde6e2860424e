package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// The reads of `flightfeed verify` (package verify/rebuild): what the
// archive holds, what the feed processed, its request log and what it
// serves of a day; and the scratch schema a rebuild writes in. Every read
// runs in one read-only transaction of its own.

// ArchiveIndex lists the archived messages without their bodies.
func (s *Store) ArchiveIndex(ctx context.Context) ([]verify.Archived, error) {
	var out []verify.Archived
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT message_id, received_at, truncated FROM msg_archive ORDER BY received_at, message_id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (verify.Archived, error) {
			var a verify.Archived
			err := row.Scan(&a.ID, &a.Received, &a.Truncated)
			return a, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the archive's index: %w", err)
	}
	return out, nil
}

// ArchivedRow reads message id's archived raw row as the mailbox served
// it: its body (cut at the size limit when Truncated), its real size.
func (s *Store) ArchivedRow(ctx context.Context, id int64) (pumpdata.Row, error) {
	r := pumpdata.Row{ID: id}
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT received_at, byte_size, truncated, body FROM msg_archive WHERE message_id = $1`, id).
			Scan(&r.Received, &r.Size, &r.Truncated, &r.Body)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("read archived message %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read archived message %d: %w", id, err)
	}
	return r, nil
}

// ProcessedMessages lists every message's processing state.
func (s *Store) ProcessedMessages(ctx context.Context) ([]verify.Processed, error) {
	var out []verify.Processed
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT message_id, received_at, status, coalesce(reason, ''), coalesce(finished_at, updated_at)
			FROM proc_state ORDER BY received_at, message_id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (verify.Processed, error) {
			var p verify.Processed
			err := row.Scan(&p.ID, &p.Received, &p.Status, &p.Reason, &p.Finished)
			return p, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read processing states: %w", err)
	}
	return out, nil
}

// RequestLog reads every outbound request as it stands.
func (s *Store) RequestLog(ctx context.Context) ([]verify.LoggedRequest, error) {
	var out []verify.LoggedRequest
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+requestColumns+`, updated_at, coalesce(completed_by, 0) FROM req_track ORDER BY id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (verify.LoggedRequest, error) {
			var r verify.LoggedRequest
			err := row.Scan(&r.ID, &r.Kind, &r.Day, &r.Receiver, &r.Seqn, &r.Status, &r.RequestedAt, &r.SentAt,
				&r.Rejections, &r.Rejection, &r.UpdatedAt, &r.CompletedBy)
			if r.SentAt.Unix() == 0 {
				r.SentAt = time.Time{}
			}
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the request log: %w", err)
	}
	return out, nil
}

// DayTouches lists the messages the day names: its snapshots' attempts
// (trace log), its ledger's snapshot, its flights' last messages.
func (s *Store) DayTouches(ctx context.Context, day string) ([]verify.Touch, error) {
	var out []verify.Touch
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT DISTINCT msg_id, 'a snapshot of the day' FROM schd_snap_log WHERE operation_day = $1::date
			UNION ALL SELECT last_message_id, 'the day''s ledger snapshot' FROM schd_gen WHERE operation_day = $1::date
			UNION ALL SELECT DISTINCT last_message_id, 'the last message of a flight of the day' FROM flight_schd WHERE operation_day = $1::date`, day)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (verify.Touch, error) {
			var t verify.Touch
			err := row.Scan(&t.ID, &t.What)
			return t, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the messages of %s: %w", day, err)
	}
	return out, nil
}

// DayLedger reads day's snapshot ledger and roster.
func (s *Store) DayLedger(ctx context.Context, day string) (verify.Ledger, error) {
	var l verify.Ledger
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT version, last_message_id FROM schd_gen WHERE operation_day = $1::date`, day).
			Scan(&l.Version, &l.LastMessageID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		l.Present = true
		rows, err := tx.Query(ctx, `SELECT flid FROM schd_gen_flid WHERE operation_day = $1::date ORDER BY flid`, day)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		for _, id := range ids {
			l.Roster = append(l.Roster, flight.FLID(id)) //nolint:gosec // the column is checked 0..999999999999
		}
		return err
	})
	if err != nil {
		return l, fmt.Errorf("read the ledger of %s: %w", day, err)
	}
	return l, nil
}

// WithSearchPath makes every connection's search_path schema (and
// nothing else): the tables a migration or a query names unqualified are
// then schema's (a scratch schema's, for a rebuild).
func WithSearchPath(schema string) ConnOption {
	return func(c *pgconn.Config) { c.RuntimeParams["search_path"] = schema }
}

// CreateScratchSchema creates the empty schema (a plain identifier) in
// the database of dsn.
func CreateScratchSchema(ctx context.Context, dsn, schema string, opts ...ConnOption) error {
	return onConn(ctx, dsn, opts, fmt.Sprintf("create schema %s", schema), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
}

// DropScratchSchema drops schema and everything in it.
func DropScratchSchema(ctx context.Context, dsn, schema string, opts ...ConnOption) error {
	return onConn(ctx, dsn, opts, fmt.Sprintf("drop schema %s", schema), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

func onConn(ctx context.Context, dsn string, opts []ConnOption, what, sql string, args ...any) error {
	conn, err := connect(ctx, dsn, opts, what)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// connect opens one connection to the database of dsn, for what.
func connect(ctx context.Context, dsn string, opts []ConnOption, what string) (*pgx.Conn, error) {
	cfg, err := parseConnConfig(dsn)
	if err != nil {
		return nil, dsnError(dsn, "%s: parse database DSN: %w", what, parseReason(err))
	}
	for _, o := range opts {
		o(&cfg.Config)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, dsnError(dsn, "%s: connect: %w", what, err)
	}
	return conn, nil
}

// ErrVerifyRunning is LockVerification's answer while another
// verification of the feed holds the lock.
var ErrVerifyRunning = errors.New("another verification of this feed is running")

// LockVerification takes the feed's verification lock: one verification
// at a time per feed (per schema of its database), whichever process runs
// it — a pump pod through the read API or `flightfeed verify` on a
// workstation. It is a session advisory lock on a connection of its own:
// a process that dies releases it with its connection. It answers
// ErrVerifyRunning at once when the lock is held; unlock releases it.
func LockVerification(ctx context.Context, dsn string, opts ...ConnOption) (unlock func(), err error) {
	conn, err := connect(ctx, dsn, opts, "lock the verification")
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+verifyLockKey+`)`).Scan(&got); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock the verification: %w", err)
	}
	if !got {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, ErrVerifyRunning
	}
	// The lock is released by a statement before the session closes:
	// closing alone releases it only when the server's backend has seen
	// the connection go, a moment after Close returns, and a verification
	// started in that moment (the next run of a script) was refused.
	// Should the statement fail, closing still releases it.
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock(`+verifyLockKey+`)`)
		_ = conn.Close(uctx)
	}, nil
}

// verifyLockKey is the feed's verification lock: advisory locks are per
// database, the key per schema.
const verifyLockKey = `hashtext(current_schema() || '.flightfeed_verify')`

// unlockTimeout bounds the release of the verification lock (then the
// closed session releases it).
const unlockTimeout = 5 * time.Second

// RecordVerification keeps rec as its day's last verification
// (day_verification), replacing the one before. It writes with the
// writer's DSN: `verify` reads the live tables read-only and writes only
// this row.
func RecordVerification(ctx context.Context, dsn string, rec verify.Record, opts ...ConnOption) error {
	return onConn(ctx, dsn, opts, "record the verification of "+rec.Day, `
		INSERT INTO day_verification (operation_day, outcome, flights, differing, messages, reason, started_at, finished_at, ran_by)
		VALUES ($1::date, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (operation_day) DO UPDATE SET outcome = excluded.outcome, flights = excluded.flights,
			differing = excluded.differing, messages = excluded.messages, reason = excluded.reason,
			started_at = excluded.started_at, finished_at = excluded.finished_at, ran_by = excluded.ran_by`,
		rec.Day, rec.Outcome, rec.Flights, rec.Differing, rec.Messages, rec.Reason, rec.StartedAt, rec.FinishedAt, rec.RanBy)
}

// Verifications reads the last verification of every day that had one,
// days ascending.
func (s *Store) Verifications(ctx context.Context) ([]verify.Record, error) {
	var out []verify.Record
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT operation_day::text, outcome, flights, differing, messages, reason, started_at, finished_at, ran_by
			FROM day_verification ORDER BY operation_day`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (verify.Record, error) {
			var r verify.Record
			err := row.Scan(&r.Day, &r.Outcome, &r.Flights, &r.Differing, &r.Messages, &r.Reason, &r.StartedAt, &r.FinishedAt, &r.RanBy)
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the verifications: %w", err)
	}
	return out, nil
}
