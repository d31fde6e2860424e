package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// History reasons (flight_history.reason).
const (
	HistoryScheduled = pumpdata.HistoryScheduled
	HistoryCancelled = pumpdata.HistoryCancelled
	HistoryDeparted  = pumpdata.HistoryDeparted
	HistoryArrived   = pumpdata.HistoryArrived
	HistoryNullDay   = pumpdata.HistoryNullDay
)

// HistoryCutoffs decide when a flight counts as finished (processing rules R8.1:
// "the window is computed on the operation day SODT belongs to, in the
// airport's local time zone"). Every rule is anchored on the end of the
// flight's operation day, or, while it has none, of the airport-local day
// of its SODT: a rule holds when the later of that day end and its SIS time
// is before its cutoff (now minus the rule's age). A flight without either
// anchor is never history by these rules (NULL-day retention covers it). A
// zero cutoff disables its rule.
type HistoryCutoffs = pumpdata.HistoryCutoffs

// SweepHistory moves up to limit finished flights to flight_history and
// deletes them from current state, in this one transaction (processing rules R10.7: the
// history write and the delete commit together, so nothing is deleted that
// history did not take). Each removal queues a tombstone.
func (t *Tx) SweepHistory(ctx context.Context, meta Meta, c HistoryCutoffs, limit int) (int, error) {
	plausible := c.Plausible
	if plausible <= 0 {
		plausible = 1 << 62 // no check
	}
	rows, err := t.tx.Query(ctx, `
		WITH f AS (
			SELECT flid, sodt_utc, cncl_utc, naat_utc, neat_utc,
				((coalesce(operation_day, (sodt_utc AT TIME ZONE $6)::date) + 1)::timestamp AT TIME ZONE $6) AS day_end
			FROM flight_schd
		), r AS (
			SELECT flid,
				$1::timestamptz IS NOT NULL AND greatest(day_end, sodt_utc) < $1 AS scheduled,
				$2::timestamptz IS NOT NULL AND abs(extract(epoch FROM cncl_utc - day_end)) <= $7 AND greatest(day_end, cncl_utc) < $2 AS cancelled,
				$3::timestamptz IS NOT NULL AND abs(extract(epoch FROM naat_utc - day_end)) <= $7 AND greatest(day_end, naat_utc) < $3 AS departed,
				$4::timestamptz IS NOT NULL AND abs(extract(epoch FROM neat_utc - day_end)) <= $7 AND greatest(day_end, neat_utc) < $4 AS arrived
			FROM f WHERE day_end IS NOT NULL
		)
		SELECT flid, CASE WHEN scheduled THEN 'SODT_AGE' WHEN cancelled THEN 'CNCL_AGE' WHEN departed THEN 'NAAT_AGE' ELSE 'NEAT_AGE' END
		FROM r WHERE scheduled OR cancelled OR departed OR arrived
		ORDER BY flid LIMIT $5`, nullTime(c.Scheduled), nullTime(c.Cancelled), nullTime(c.Departed), nullTime(c.Arrived), limit,
		c.Zone, plausible.Seconds())
	if err != nil {
		return 0, fmt.Errorf("select finished flights: %w", err)
	}
	return t.moveToHistory(ctx, meta, rows)
}

// SweepNullDay moves flights that no full-day snapshot ever included and
// that saw no update since before to history (retention rule of processing rules
// R8.3, only when configured).
func (t *Tx) SweepNullDay(ctx context.Context, meta Meta, before time.Time, limit int) (int, error) {
	rows, err := t.tx.Query(ctx, `SELECT flid, 'NULL_DAY_RETENTION' FROM flight_schd
		WHERE operation_day IS NULL AND updated_at < $1 ORDER BY flid LIMIT $2`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("select never-scheduled flights: %w", err)
	}
	return t.moveToHistory(ctx, meta, rows)
}

func (t *Tx) moveToHistory(ctx context.Context, meta Meta, rows pgx.Rows) (int, error) {
	reasons := map[flight.FLID]string{}
	var flids []flight.FLID
	for rows.Next() {
		var id int64
		var reason string
		if err := rows.Scan(&id, &reason); err != nil {
			rows.Close()
			return 0, fmt.Errorf("select flights for history: %w", err)
		}
		f := flight.FLID(id) //nolint:gosec // checked column
		flids = append(flids, f)
		reasons[f] = reason
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("select flights for history: %w", err)
	}
	if len(flids) == 0 {
		return 0, nil
	}
	current, err := t.loadByFLID(ctx, flids)
	if err != nil {
		return 0, err
	}
	b := &pgx.Batch{}
	victims := make([]flight.State, 0, len(flids))
	for _, f := range flids {
		s, ok := current[f]
		if !ok {
			continue
		}
		doc, err := flight.CanonicalJSON(s)
		if err != nil {
			return 0, err
		}
		b.Queue(`INSERT INTO flight_history (flid, operation_day, state_version, state, reason, archived_at)
			VALUES ($1, $2::date, $3, $4::jsonb, $5, $6)`,
			int64(f), dayPtr(s.OperationDay), s.StateVersion, string(doc), reasons[f], t.now) //nolint:gosec // 12 digits
		victims = append(victims, s)
	}
	if _, err := t.deleteFlights(ctx, b, meta, victims); err != nil {
		return 0, err
	}
	if err := t.sendBatch(ctx, b); err != nil {
		return 0, fmt.Errorf("move %d flights to history: %w", len(victims), err)
	}
	return len(victims), nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ledgerHolds is a WITH list ending in held(day, held): for every ledger
// day before $1 ("YYYY-MM-DD", or 'infinity' for all) that a precondition
// of processing rules R8.3 keeps, the first reason, as "REASON: detail". The
// preconditions are per day:
//   - FLIGHTS_CURRENT: a flight of the day is still in current state (its
//     roster is still the day's diff-delete basis; it leaves with history);
//   - MESSAGE_UNFINISHED: a PENDING or FAILED message concerns the day;
//   - BACKFILL_PENDING: a message of the day waits for its write-back.
//
// Only a snapshot (SCHD) writes a day's ledger, so only SCHD messages (and
// messages whose type is not known yet) concern a day: the days their
// trace rows name, every day when they name none (an unfinished snapshot
// may yet be of any day). A FLOP never touches a ledger; an FDEL only the
// roster of its flight's day, which that flight already holds.
const ledgerHolds = `cand AS (SELECT operation_day AS day FROM schd_gen WHERE operation_day < $1::date),
	concern AS (
		SELECT p.message_id, 2 AS prio, 'MESSAGE_UNFINISHED: message ' || p.message_id || ' is ' || p.status ||
				coalesce(' (' || p.reason || ')', '') AS held
			FROM proc_state p
			WHERE p.status IN ('PENDING', 'FAILED') AND coalesce(p.msg_type, 'SCHD') = 'SCHD'
		UNION ALL
		SELECT p.message_id, 3, 'BACKFILL_PENDING: message ' || p.message_id || ' (' || p.status || ') is not yet written back to the mailbox'
			FROM (SELECT DISTINCT unnest(message_ids) AS message_id FROM backfill_todo) b
			JOIN proc_state p ON p.message_id = b.message_id
			WHERE coalesce(p.msg_type, 'SCHD') = 'SCHD'),
	holds AS (
		SELECT d.day, 1 AS prio, 0::bigint AS message_id, 'FLIGHTS_CURRENT: flights of the day are still in current state (not yet moved to history)' AS held
			FROM cand d WHERE EXISTS (SELECT 1 FROM flight_schd f WHERE f.operation_day = d.day)
		UNION ALL
		SELECT d.day, c.prio, c.message_id, c.held
			FROM concern c
			LEFT JOIN LATERAL (SELECT array_agg(DISTINCT l.operation_day) AS days FROM schd_snap_log l
				WHERE l.msg_id = c.message_id AND l.operation_day IS NOT NULL) t ON true
			JOIN cand d ON t.days IS NULL OR d.day = ANY (t.days)),
	held AS (SELECT DISTINCT ON (day) day, held FROM holds ORDER BY day, prio, message_id)`

// PruneLedger removes the ledger of days before cutoff ("YYYY-MM-DD") whose
// preconditions hold (processing rules R8.3), day by day: a day is kept while a
// flight of it is in current state, or a message that concerns it is
// unfinished or waits for its write-back (ledgerHolds); the other days go.
// LedgerDay.Held says why a day is kept.
func (t *Tx) PruneLedger(ctx context.Context, cutoff string) ([]string, error) {
	rows, err := t.tx.Query(ctx, `WITH `+ledgerHolds+`
		DELETE FROM schd_gen g
		WHERE g.operation_day < $1::date
		  AND NOT EXISTS (SELECT 1 FROM held h WHERE h.day = g.operation_day)
		RETURNING g.operation_day::text`, cutoff)
	if err != nil {
		return nil, fmt.Errorf("prune ledger before %s: %w", cutoff, err)
	}
	days, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("prune ledger before %s: %w", cutoff, err)
	}
	return days, nil
}

// Prune removes trace-log rows, archived raw messages and done outbox rows
// (at or below the dispatcher's cursor, not parked) older than their
// cutoffs (zero cutoff: keep).
//
// The trace log is pruned by (OPERATION_DAY, RECV_AT) (processing rules R5.6,
// R8.3): a row goes once both its operation day is before traceBefore's
// day in the airport zone and it was received before traceBefore; a row
// without a day (a snapshot rejected before its day was known) goes by its
// receipt alone. So a late or replayed snapshot of an old day keeps its
// trace for the full retention after it arrived, and a snapshot received
// long ago for a day still inside the retention keeps its trace while that
// day does. Both statements are range scans of schd_snap_log_day
// (operation_day, recv_at).
func (s *Store) Prune(ctx context.Context, traceBefore, archiveBefore, eventsBefore time.Time) (int64, error) {
	var total int64
	traceDay := ""
	if !traceBefore.IsZero() {
		traceDay = traceBefore.In(s.loc).Format(time.DateOnly)
	}
	for _, p := range []struct {
		what   string
		sql    string
		cutoff time.Time
		args   []any
	}{
		{"trace log rows of past days", `DELETE FROM schd_snap_log WHERE operation_day < $2::date AND recv_at < $1`, traceBefore, []any{traceDay}},
		{"trace log rows without a day", `DELETE FROM schd_snap_log WHERE operation_day IS NULL AND recv_at < $1`, traceBefore, nil},
		// A day's last verification goes with its trace.
		{"verifications of past days", `DELETE FROM day_verification WHERE operation_day < $2::date AND finished_at < $1`, traceBefore, []any{traceDay}},
		{"raw archive", `DELETE FROM msg_archive WHERE archived_at < $1`, archiveBefore, nil},
		// A flight's history goes with the raw messages that made it.
		{"flight history", `DELETE FROM flight_change WHERE committed_at < $1`, archiveBefore, nil},
		// Done rows (at or below the cursor) go by primary-key range, one
		// statement; parked ones stay until re-delivered or superseded.
		{"done outbox rows", `DELETE FROM msg_event e WHERE e.id <= (SELECT delivered_id FROM msg_event_cursor) AND e.created_at < $1
			AND NOT EXISTS (SELECT 1 FROM msg_event_parked k WHERE k.event_id = e.id)`, eventsBefore, nil},
	} {
		if p.cutoff.IsZero() {
			continue
		}
		tag, err := s.pool.Exec(ctx, p.sql, append([]any{p.cutoff}, p.args...)...)
		if err != nil {
			return total, fmt.Errorf("prune %s before %s: %w", p.what, p.cutoff.UTC().Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
	}
	return total, nil
}
