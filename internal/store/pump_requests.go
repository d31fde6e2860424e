package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Request states (req_track.status).
const (
	RequestPending   = pumpdata.RequestPending
	RequestCompleted = pumpdata.RequestCompleted
	RequestExpired   = pumpdata.RequestExpired
	RequestTimedOut  = pumpdata.RequestTimedOut
	RequestFailed    = pumpdata.RequestFailed
)

// Request is one outbound request (full-day or reference-data).
type Request = pumpdata.Request

// An RQRD's operation_day is NULL: its Day is "".
const requestColumns = `id, kind, coalesce(operation_day::text, ''), coalesce(receiver, ''), seqn, status, requested_at, coalesce(sent_at, 'epoch'),
	rejections, coalesce(rejection, '')`

func scanRequest(row pgx.Row) (*Request, error) {
	var r Request
	if err := row.Scan(&r.ID, &r.Kind, &r.Day, &r.Receiver, &r.Seqn, &r.Status, &r.RequestedAt, &r.SentAt,
		&r.Rejections, &r.Rejection); err != nil {
		return nil, err
	}
	if r.SentAt.Unix() == 0 {
		r.SentAt = time.Time{}
	}
	return &r, nil
}

// PendingRequest returns the live request of kind, or nil.
func (t *Tx) PendingRequest(ctx context.Context, kind string) (*Request, error) {
	r, err := scanRequest(t.tx.QueryRow(ctx, `SELECT `+requestColumns+` FROM req_track WHERE kind = $1 AND status = 'PENDING'`, kind))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pending %s request: %w", kind, err)
	}
	return r, nil
}

// RequestedBefore reports whether a request of kind for day was ever sent
// to receiver (or recorded without a receiver).
func (t *Tx) RequestedBefore(ctx context.Context, kind, day, receiver string) (bool, error) {
	var ok bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM req_track WHERE kind = $1 AND operation_day = $2::date
			AND sent_at IS NOT NULL AND (receiver IS NULL OR receiver = $3))`,
		kind, day, receiver).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up %s requests for %s: %w", kind, day, err)
	}
	return ok, nil
}

// CompleteRequest marks a pending request answered by message msgID.
func (t *Tx) CompleteRequest(ctx context.Context, id, msgID int64) error {
	_, err := t.tx.Exec(ctx, `UPDATE req_track SET status = 'COMPLETED', completed_at = $3, completed_by = $2, updated_at = $3
		WHERE id = $1 AND status = 'PENDING'`, id, msgID, t.now)
	if err != nil {
		return fmt.Errorf("complete request %d: %w", id, err)
	}
	return nil
}

// OpenRequest registers a new live request of kind for day to receiver,
// expiring the previous live one (one live request per kind, processing rules R7.1).
// It carries the refusals in a row of the day's newest request when that
// one ended without an answer (TIMED_OUT, EXPIRED): a re-ask continues the
// count; an answered day, or a FAILED one an operator re-requested, starts
// at zero.
func (t *Tx) OpenRequest(ctx context.Context, kind, day, receiver, start, end, routingID string, seqn int) (*Request, error) {
	if _, err := t.tx.Exec(ctx, `UPDATE req_track SET status = 'EXPIRED', updated_at = $2 WHERE kind = $1 AND status = 'PENDING'`,
		kind, t.now); err != nil {
		return nil, fmt.Errorf("expire %s requests: %w", kind, err)
	}
	r, err := scanRequest(t.tx.QueryRow(ctx, `WITH prev AS (
			SELECT CASE WHEN status IN ('TIMED_OUT', 'EXPIRED') THEN rejections ELSE 0 END AS rejections,
			       CASE WHEN status IN ('TIMED_OUT', 'EXPIRED') THEN rejection END AS rejection
			FROM req_track WHERE kind = $1 AND operation_day = $2::date ORDER BY id DESC LIMIT 1)
		INSERT INTO req_track (kind, operation_day, receiver, range_start, range_end, routing_id, seqn,
			status, requested_at, updated_at, rejections, rejection)
		VALUES ($1, $2::date, $8, $3, $4, $5, $6, 'PENDING', $7, $7,
			coalesce((SELECT rejections FROM prev), 0), (SELECT rejection FROM prev)) RETURNING `+requestColumns,
		kind, day, start, end, routingID, seqn, t.now, receiver))
	if err != nil {
		return nil, fmt.Errorf("open %s request for %s: %w", kind, day, err)
	}
	return r, nil
}

// OpenReferenceRequest registers a new live reference-data request (RQRD)
// for the list of SIS TYPE typ to receiver, expiring the list's previous
// live one (left unanswered): kind pumpdata.ReferenceRequestKind(typ), no
// operation day, no range.
func (t *Tx) OpenReferenceRequest(ctx context.Context, typ, receiver, routingID string, seqn int) (*Request, error) {
	kind := pumpdata.ReferenceRequestKind(typ)
	if _, err := t.tx.Exec(ctx, `UPDATE req_track SET status = 'EXPIRED', updated_at = $2 WHERE kind = $1 AND status = 'PENDING'`,
		kind, t.now); err != nil {
		return nil, fmt.Errorf("expire %s requests: %w", kind, err)
	}
	r, err := scanRequest(t.tx.QueryRow(ctx, `INSERT INTO req_track (kind, operation_day, receiver, range_start, range_end, routing_id, seqn,
			status, requested_at, updated_at)
		VALUES ($1, NULL, $2, '', '', $3, $4, 'PENDING', $5, $5) RETURNING `+requestColumns,
		kind, receiver, routingID, seqn, t.now))
	if err != nil {
		return nil, fmt.Errorf("open %s request: %w", kind, err)
	}
	return r, nil
}

// ReferenceAskedSince returns which of types (SIS TYPEs) had their list
// asked for (an RQRD sent), answered (an RQRD COMPLETED) or replaced whole
// by any message (a DNLD or RESP, ref_list.replaced_at) at or after since:
// the pump does not ask for them again before its next round.
func (s *Store) ReferenceAskedSince(ctx context.Context, types []string, since time.Time) (map[string]bool, error) {
	kinds := make([]string, len(types))
	for i, typ := range types {
		kinds[i] = pumpdata.ReferenceRequestKind(typ)
	}
	rows, err := s.pool.Query(ctx, `SELECT u.typ FROM unnest($1::text[], $2::text[]) AS u(typ, kind)
		WHERE EXISTS (SELECT 1 FROM req_track r WHERE r.kind = u.kind AND r.operation_day IS NULL
				AND (r.sent_at >= $3 OR (r.status = 'COMPLETED' AND r.completed_at >= $3)))
			OR EXISTS (SELECT 1 FROM ref_list l WHERE l.kind = u.typ AND l.replaced_at >= $3)`, types, kinds, since)
	if err != nil {
		return nil, fmt.Errorf("read reference lists asked for since %s: %w", since.Format(time.RFC3339), err)
	}
	asked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read reference lists asked for since %s: %w", since.Format(time.RFC3339), err)
	}
	out := make(map[string]bool, len(asked))
	for _, typ := range asked {
		out[typ] = true
	}
	return out, nil
}

// RefuseAnswer records that message msgID, an answer to the pending
// request id, was refused (rejection, the rejections-th identical refusal
// in a row); failed ends the request FAILED (given up), else it stays
// PENDING.
func (t *Tx) RefuseAnswer(ctx context.Context, id, msgID int64, rejections int, rejection string, failed bool) error {
	status := RequestPending
	if failed {
		status = RequestFailed
	}
	if _, err := t.tx.Exec(ctx, `UPDATE req_track SET status = $5::text, rejections = $3, rejection = $4, updated_at = $6::timestamptz,
			completed_at = CASE WHEN $5::text = 'FAILED' THEN $6::timestamptz END,
			completed_by = CASE WHEN $5::text = 'FAILED' THEN $2::bigint END
		WHERE id = $1 AND status = 'PENDING'`, id, msgID, rejections, rejection, status, t.now); err != nil {
		return fmt.Errorf("record refused answer %d to request %d: %w", msgID, id, err)
	}
	return nil
}

// TimeOutRequest ends a pending request that got no answer in time.
func (t *Tx) TimeOutRequest(ctx context.Context, id int64) error {
	if _, err := t.tx.Exec(ctx, `UPDATE req_track SET status = 'TIMED_OUT', updated_at = $2 WHERE id = $1 AND status = 'PENDING'`,
		id, t.now); err != nil {
		return fmt.Errorf("time out request %d: %w", id, err)
	}
	return nil
}

// RequestSent records that the request is in the outbound table.
func (s *Store) RequestSent(ctx context.Context, id, outboxID int64, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE req_track SET sent_at = $3, outbox_id = $2, updated_at = $3 WHERE id = $1`,
		id, outboxID, at); err != nil {
		return fmt.Errorf("mark request %d sent: %w", id, err)
	}
	return nil
}

// LastSeqn returns the SEQN of the newest request (0 when none), so the
// 6-digit sequence continues across restarts.
func (s *Store) LastSeqn(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT seqn FROM req_track ORDER BY id DESC LIMIT 1), 0)`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read last request SEQN: %w", err)
	}
	return n, nil
}

// AskedSince returns which of days had a request of kind sent or answered
// (COMPLETED) at or after since, whatever became of it (pending, answered,
// timed out, expired, failed): a pump that starts again does not ask for
// them before its next round; and which of days are held: a request of the
// day FAILED and no operator re-requested it since (ReleaseFailedRequests).
func (s *Store) AskedSince(ctx context.Context, kind string, days []string, since time.Time) (pumpdata.AskedDays, error) {
	out := pumpdata.AskedDays{Asked: map[string]bool{}, Failed: map[string]pumpdata.FailedRequest{}}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT operation_day::text FROM req_track
		WHERE kind = $1 AND operation_day = ANY($2::date[]) AND (sent_at >= $3 OR (status = 'COMPLETED' AND completed_at >= $3))`,
		kind, days, since)
	if err != nil {
		return out, fmt.Errorf("read %s requests sent since %s: %w", kind, since.Format(time.RFC3339), err)
	}
	answered, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return out, fmt.Errorf("read %s requests sent since %s: %w", kind, since.Format(time.RFC3339), err)
	}
	for _, d := range answered {
		out.Asked[d] = true
	}
	rows, err = s.pool.Query(ctx, `SELECT DISTINCT ON (operation_day) operation_day::text, coalesce(rejection, ''), coalesce(completed_by, 0), updated_at
		FROM req_track WHERE kind = $1 AND operation_day = ANY($2::date[]) AND status = 'FAILED' AND released_at IS NULL
		ORDER BY operation_day, id DESC`, kind, days)
	if err != nil {
		return out, fmt.Errorf("read failed %s requests: %w", kind, err)
	}
	failed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pumpdata.FailedRequest, error) {
		var f pumpdata.FailedRequest
		err := row.Scan(&f.Day, &f.Rejection, &f.MessageID, &f.FailedAt)
		return f, err
	})
	if err != nil {
		return out, fmt.Errorf("read failed %s requests: %w", kind, err)
	}
	for _, f := range failed {
		out.Failed[f.Day] = f
	}
	return out, nil
}

// CurrentRequest returns the live request of kind outside a transaction.
func (s *Store) CurrentRequest(ctx context.Context, kind string) (*Request, error) {
	r, err := scanRequest(s.pool.QueryRow(ctx, `SELECT `+requestColumns+` FROM req_track WHERE kind = $1 AND status = 'PENDING'`, kind))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pending %s request: %w", kind, err)
	}
	return r, nil
}
