package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// The dispatcher's side of the outbox (msg_event). The outbox is append-only:
// delivery changes no msg_event row. The dispatcher's cursor
// (msg_event_cursor.delivered_id) says which rows are done: every row at or
// below it is done — its notice delivered or parked, its state delivered,
// parked or superseded by a newer state of its flight; every row above it
// is pending. A row is one message's effect on one flight and holds up to
// two records (OutboxEvent: its notice, its state), read and parked apart. These statements run outside the
// pump's write transactions and never touch state tables. Each is one
// statement (one round trip), whatever the number of rows (a window read
// is two once, when a backlog starts: see ReadWindow); the ones that
// change anything check the caller's fencing epoch in that same statement
// (they take no lock on pipeline_lock, so they never wait for a pump's
// transaction).
//
// The cursor relies on rows committing in id order: every writer of
// msg_event locks the pipeline_lock row first (Store.Begin, and
// RedeliverParked), so the transactions that insert rows are serial and a
// lower id is never committed after a higher one is visible.

// OutboxEvent is one pending record: a msg_event row's notice or its
// state.
type OutboxEvent struct {
	// ID is its msg_event row; with Kind, the record's identity (Key).
	ID int64
	// Kind is KindState (KAFKA_SCHD) or KindNotice (KAFKA_MSG); Event is
	// EventUpsert, EventDelete or EventNotice.
	Kind, Event  string
	FLID         flight.FLID
	StateVersion int64
	// OperationDay is "YYYY-MM-DD", or "" while the flight's day is NULL.
	OperationDay string
	// MessageID is the mailbox row whose transaction queued the event.
	MessageID int64
	// Payload is the exact value to publish, as committed.
	Payload []byte
	// Attempts counts the failed attempts of the row's records.
	Attempts  int32
	CreatedAt time.Time
	// ReceivedAt is the mailbox's DATE_RECEIVED of the message whose
	// transaction queued the event: the row's received_at, written with
	// it. A row written before migration 00027 has none and reports its
	// processing row's received_at instead (zero when that row is gone).
	ReceivedAt time.Time
	// Covers are the rows of the window whose record of this kind is done
	// once this event is (delivered or parked): a notice covers its own
	// row, a flight's newest state the state of every row of that flight
	// in the window (its own row too when it lies in the window).
	// Ascending.
	Covers []int64
	// Parked: the record is listed in msg_event_parked (it was refused for
	// good): it is not sent, and it is done (a parked newest state
	// supersedes the older ones, as when it was parked).
	Parked bool
}

// RecordKey identifies one record of the outbox: its row and its kind.
type RecordKey struct {
	ID   int64
	Kind string
}

// Key is the event's record identity.
func (e OutboxEvent) Key() RecordKey { return RecordKey{ID: e.ID, Kind: e.Kind} }

// Window is one read of the pending outbox.
type Window struct {
	// Cursor is the cursor the window was read above.
	Cursor int64
	// Events are the window's records, coalesced, in id order (a row's
	// state before its notice).
	Events []OutboxEvent
	// Full: the window held limit rows, so more may be pending.
	Full bool
}

// PendingEvents returns the next pending records to publish, coalesced, in
// id (commit) order: it takes the oldest limit rows above the cursor (the
// window), keeps their notices as they are, and replaces the states of
// each FLID in the window by that FLID's newest state above the cursor
// (which may lie beyond the window), so each FLID's full state appears at
// most once, at its newest version (processing rules R7.3). At most 2*limit
// records are returned, and none only when nothing is pending.
//
// The window is read by primary key from the cursor, whole rows at once
// (its notices come from them), and each FLID's newest state, whole, from
// the window itself when it holds every pending row, else from
// msg_event_state, so a pass costs the same however long the backlog is
// and reads each record's row once: a row's received time is its own
// (received_at), its processing row looked up only for a row written
// before that column.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]OutboxEvent, error) {
	w, err := s.ReadWindow(ctx, limit, nil)
	return w.Events, err
}

// ReadWindow is PendingEvents with the cursor it read above, each
// record's covered rows (what AdvanceCursor needs) and whether the window
// was full (limit rows): only then can more rows be pending than the read
// took, so a dispatcher that was not notified of a new commit since need
// not read again at once. The rows done lists (rows whose every record a
// dispatcher delivered or parked above the cursor, WindowDone) are left
// out of the window, so a row that keeps failing at the cursor does not
// stop the rows after it: the window moves on past the done ones. A
// flight's newest state is returned even when its row is done (its older
// rows are covered by it, and the caller knows not to send it again); so
// is a notice delivered earlier whose row still waits for its state.
func (s *Store) ReadWindow(ctx context.Context, limit int, done []int64) (Window, error) {
	if len(done) == 0 && !s.windowBig.Load() {
		// A small window, read whole (every row above the cursor): the
		// short statement, coalesced here. A bigger one is read again by
		// the full statement, and so is the next window.
		if w, whole, err := s.readWholeWindow(ctx, min(limit, shortWindowRows)); err != nil || whole {
			return w, err
		}
	}
	w, rows, err := s.readWindowFull(ctx, limit, done)
	if err == nil {
		s.windowBig.Store(w.Full || rows >= shortWindowRows)
	}
	return w, err
}

// shortWindowRows bounds the windows read by the short statement: one of
// as many rows or more (a backlog) goes to the full statement, having cost
// at most a read of this many rows.
const shortWindowRows = 64

// readWindowFull is ReadWindow by the full statement (readWindowSQL),
// whatever the window holds, with the number of rows the window held.
func (s *Store) readWindowFull(ctx context.Context, limit int, done []int64) (Window, int64, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if len(done) == 0 {
		rows, err = s.pool.Query(ctx, readWindowSQL, limit)
	} else {
		rows, err = s.pool.Query(ctx, readWindowSkipSQL, limit, done)
	}
	if err != nil {
		return Window{}, 0, fmt.Errorf("read pending outbox events: %w", err)
	}
	events, window, cursor, err := scanWindow(rows, limit)
	if err != nil {
		return Window{}, 0, fmt.Errorf("read pending outbox events: %w", err)
	}
	if len(events) == 0 {
		if cursor, err = s.OutboxCursor(ctx); err != nil {
			return Window{}, 0, err
		}
	}
	sortWindow(events)
	return Window{Cursor: cursor, Events: events, Full: window >= int64(limit)}, window, nil
}

// scanWindow reads the full statement's records. A backlog's windows are
// read one after another, each of up to 2*limit records with a payload:
// the rows are scanned into a slice sized for that bound, through one
// list of destinations, and the few distinct kinds, events and days are
// shared strings, where collecting them row by row (pgx.CollectRows)
// grew the slice, boxed the destinations and allocated every string of
// every row.
func scanWindow(rows pgx.Rows, limit int) (events []OutboxEvent, window, cursor int64, err error) {
	defer rows.Close()
	events = make([]OutboxEvent, 0, 2*max(limit, 0))
	var (
		flid     int64
		received pgtype.Timestamptz
		e        OutboxEvent
	)
	// kind (1), event (2) and day (5) are read from the raw values (text
	// in either format): nil destinations.
	dest := []any{&e.ID, nil, nil, &flid, &e.StateVersion, nil,
		&e.MessageID, &e.Payload, &e.Attempts, &e.CreatedAt, &received, &e.Covers, &e.Parked, &window, &cursor}
	shared := map[string]string{KindState: KindState, KindNotice: KindNotice,
		EventUpsert: EventUpsert, EventDelete: EventDelete, EventNotice: EventNotice}
	text := func(raw []byte) string {
		if v, ok := shared[string(raw)]; ok {
			return v
		}
		v := string(raw)
		shared[v] = v
		return v
	}
	for rows.Next() {
		e = OutboxEvent{}
		received = pgtype.Timestamptz{}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, 0, err
		}
		raw := rows.RawValues()
		e.Kind, e.Event, e.OperationDay = text(raw[1]), text(raw[2]), text(raw[5])
		e.FLID = flight.FLID(flid) //nolint:gosec // CHECK (flid BETWEEN 0 AND 999999999999)
		if received.InfinityModifier != pgtype.Finite {
			return nil, 0, 0, fmt.Errorf("received_at of row %d is %v, not a time", e.ID, received.InfinityModifier)
		}
		if received.Valid {
			e.ReceivedAt = received.Time
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, err
	}
	return events, window, cursor, nil
}

// sortWindow puts a window's events in id order, a row's state before its
// notice: sorted here rather than by the server, whose sort of the records
// with their payloads was a sixth of the read's time.
func sortWindow(events []OutboxEvent) {
	slices.SortFunc(events, func(a, b OutboxEvent) int {
		if a.ID != b.ID {
			return cmp.Compare(a.ID, b.ID)
		}
		return -strings.Compare(a.Kind, b.Kind)
	})
}

// windowRow is a msg_event row as readWholeWindowSQL returns it.
type windowRow struct {
	id, flid, version, message int64
	event, day                 string
	state, notice              *string
	attempts                   int32
	created                    time.Time
	received                   *time.Time
	parkedState, parkedNotice  bool
	// none: the cursor's row alone, nothing pending.
	none bool
}

// readWholeWindow reads the rows above the cursor, at most limit, by a
// statement with a plan of a few nodes (readWholeWindowSQL): at a steady
// rate a window is a row or two, and the full statement's plan, built for
// big windows, cost more to start than to run. When it finds fewer than
// limit rows they are every row above the cursor, the case in which the
// full statement coalesces each flight's states from the window itself:
// the same is done here, to the same records (whole is true). A full
// window (limit rows) is not coalesced (whole is false): its flights'
// newest states may lie beyond it.
func (s *Store) readWholeWindow(ctx context.Context, limit int) (w Window, whole bool, err error) {
	rows, err := s.pool.Query(ctx, readWholeWindowSQL, limit)
	if err != nil {
		return Window{}, false, fmt.Errorf("read pending outbox events: %w", err)
	}
	var cursor int64
	read, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (windowRow, error) {
		var r windowRow
		var id, flid, version, message *int64
		var event, day *string
		var attempts *int32
		var created *time.Time
		err := row.Scan(&cursor, &id, &event, &flid, &version, &day, &message, &r.state, &r.notice,
			&attempts, &created, &r.received, &r.parkedState, &r.parkedNotice)
		if err != nil || id == nil {
			r.none = true
			return r, err
		}
		r.id, r.flid, r.version, r.message = *id, *flid, *version, *message
		r.day, r.attempts, r.created = *day, *attempts, *created
		if event != nil {
			r.event = *event
		}
		return r, nil
	})
	if err != nil {
		return Window{}, false, fmt.Errorf("read pending outbox events: %w", err)
	}
	if len(read) == 1 && read[0].none {
		read = nil
	}
	if len(read) >= limit {
		return Window{}, false, nil
	}
	return Window{Cursor: cursor, Events: coalesceWindow(read)}, true, nil
}

// coalesceWindow is the full statement's coalescing of a window that
// holds every row above the cursor: each row's notice as it is, and for
// each flight its newest state (highest version, then highest id)
// covering the flight's rows with a state.
func coalesceWindow(rows []windowRow) []OutboxEvent {
	events := make([]OutboxEvent, 0, len(rows))
	newest := map[int64]int{} // flid: index in events of its state
	for _, r := range rows {
		e := OutboxEvent{ID: r.id, FLID: flight.FLID(r.flid), StateVersion: r.version, //nolint:gosec // CHECK (flid BETWEEN 0 AND 999999999999)
			OperationDay: r.day, MessageID: r.message, Attempts: r.attempts, CreatedAt: r.created}
		if r.received != nil {
			e.ReceivedAt = *r.received
		}
		if r.notice != nil {
			n := e
			n.Kind, n.Event, n.Payload, n.Covers, n.Parked = KindNotice, EventNotice, []byte(*r.notice), []int64{r.id}, r.parkedNotice
			events = append(events, n)
		}
		if r.state == nil {
			continue
		}
		e.Kind, e.Event, e.Payload, e.Parked = KindState, r.event, []byte(*r.state), r.parkedState
		i, seen := newest[r.flid]
		if !seen {
			e.Covers = []int64{r.id}
			newest[r.flid] = len(events)
			events = append(events, e)
			continue
		}
		prev := events[i]
		e.Covers = append(prev.Covers, r.id)
		if r.version >= prev.StateVersion { // ids ascend: a tie goes to the later row
			events[i] = e
		} else {
			events[i].Covers = e.Covers
		}
	}
	sortWindow(events)
	return events
}

// readWholeWindowSQL is the short window read (readWholeWindow): the
// cursor, and the rows above it up to the limit with their parked records
// flagged, by the primary keys of msg_event and msg_event_parked. The
// cursor's row comes alone (NULL columns) when nothing is pending.
const readWholeWindowSQL = `
		SELECT c.delivered_id, e.id, e.event, e.flid, e.state_version, coalesce(e.operation_day::text, ''),
			e.message_id, e.state, e.notice, e.attempts, e.created_at,
			coalesce(e.received_at, (SELECT ps.received_at FROM proc_state ps WHERE ps.message_id = e.message_id)),
			coalesce(e.state IS NOT NULL AND EXISTS (
				SELECT 1 FROM msg_event_parked k WHERE k.event_id = e.id AND k.kind = 'KAFKA_SCHD'), false),
			coalesce(e.notice IS NOT NULL AND EXISTS (
				SELECT 1 FROM msg_event_parked k WHERE k.event_id = e.id AND k.kind = 'KAFKA_MSG'), false)
		FROM msg_event_cursor c LEFT JOIN LATERAL (
			SELECT * FROM msg_event WHERE id > c.delivered_id ORDER BY id LIMIT $1
		) e ON true`

// The window read (ReadWindow). The window is the oldest rows above the
// cursor in id order, read by the primary key from the cursor: without a
// list of rows to leave out, no filter at all, so the planner scans the
// index in order and stops after limit rows. (A "NOT IN (subquery)" filter
// there let it prefer a bitmap scan of every row above the cursor and a
// sort of them all, with their payloads — spilled to disk during a
// full-day snapshot's delivery — so a pass cost as much as the backlog
// was long.) With a list (a failing record at the cursor, rows done
// above it) the rows are left out by a hashed subplan, never by "<> ALL"
// against the array, which compares every row with every element.
//
// Each flight's newest state above the cursor: when the window holds fewer
// than limit rows and none were left out, it holds every row above the
// cursor, so the newest state is the window's own (no lookup, no second
// read of a row); otherwise one index probe per flight (msg_event_state)
// finds it, beyond the window too. The gates are one-time filters: only
// one of the two branches runs.
//
// That statement's generic plan has some forty nodes, all started for a
// window of one row: at a steady rate, where each message is a pass,
// ReadWindow reads a window with no list by the short statement
// (readWholeWindowSQL) instead, and goes to this one only when that read
// found shortWindowRows rows (or limit), and then for every window until
// one is small again.
const (
	readWindowHead = `
		WITH c AS MATERIALIZED (
			SELECT delivered_id AS at FROM msg_event_cursor
		), w AS MATERIALIZED (
			SELECT id, event, flid, state_version, operation_day, message_id, state, notice, attempts, created_at, received_at
			FROM msg_event
			WHERE id > (SELECT at FROM c) %s
			ORDER BY id LIMIT $1
		), n AS MATERIALIZED (
			SELECT count(*) AS rows FROM w
		), f AS MATERIALIZED (
			SELECT flid, array_agg(id ORDER BY id) AS covers FROM w WHERE state IS NOT NULL GROUP BY flid
		), pick AS (
			SELECT id, 'KAFKA_MSG' AS kind, 'NOTICE' AS event, flid, state_version, operation_day, message_id,
				notice AS payload, attempts, created_at, received_at, ARRAY[id] AS covers
			FROM w WHERE notice IS NOT NULL
			UNION ALL
			(SELECT DISTINCT ON (x.flid) x.id, 'KAFKA_SCHD', x.event, x.flid, x.state_version, x.operation_day, x.message_id,
				x.state, x.attempts, x.created_at, x.received_at, f.covers
			FROM f JOIN w x ON x.flid = f.flid AND x.state IS NOT NULL
			WHERE %s
			ORDER BY x.flid, x.state_version DESC, x.id DESC)
			UNION ALL
			SELECT x.id, 'KAFKA_SCHD', x.event, x.flid, x.state_version, x.operation_day, x.message_id,
				x.state, x.attempts, x.created_at, x.received_at, f.covers
			FROM f CROSS JOIN LATERAL (
				SELECT e.* FROM msg_event e
				WHERE e.state IS NOT NULL AND e.flid = f.flid AND e.id > (SELECT at FROM c)
				ORDER BY e.state_version DESC LIMIT 1) x
			WHERE NOT (%s)
		)
		SELECT p.id, p.kind, p.event, p.flid, p.state_version, coalesce(p.operation_day::text, ''),
			p.message_id, p.payload, p.attempts, p.created_at,
			coalesce(p.received_at, (SELECT ps.received_at FROM proc_state ps WHERE ps.message_id = p.message_id)),
			p.covers,
			EXISTS (SELECT 1 FROM msg_event_parked k WHERE k.event_id = p.id AND k.kind = p.kind),
			(SELECT rows FROM n), (SELECT at FROM c)
		FROM pick p`
	// wholeWindow: the window holds every row above the cursor.
	wholeWindow = `(SELECT rows FROM n) < $1`
)

var (
	readWindowSQL     = fmt.Sprintf(readWindowHead, "", wholeWindow, wholeWindow)
	readWindowSkipSQL = fmt.Sprintf(readWindowHead, "AND id NOT IN (SELECT unnest($2::bigint[]))", "false", "false")
)

// DoneUpTo returns how far the cursor may move once the records in done
// are (delivered or parked; a record marked Parked is done anyway): every
// record of a window row is covered by one of the window's events, a row
// is done when all of its are, and the cursor passes the window's rows in
// id order up to the first that is not done. done must hold the records
// of the rows the read left out (ReadWindow's done): they lie between the
// window's rows or after them, and when the window is not full and all its
// rows are done, the cursor passes them all (every row above the cursor
// was either read or left out).
func (w Window) DoneUpTo(done map[RecordKey]struct{}) int64 {
	to, _ := w.WindowDone(done)
	return to
}

// WindowDone is DoneUpTo with the window's rows whose every record is done
// (ascending): a dispatcher leaves them out of its next reads.
func (w Window) WindowDone(done map[RecordKey]struct{}) (to int64, rows []int64) {
	owner := map[int64]bool{}
	for _, e := range w.Events {
		_, ok := done[e.Key()]
		ok = ok || e.Parked
		for _, id := range e.Covers {
			if prev, seen := owner[id]; seen {
				owner[id] = prev && ok
			} else {
				owner[id] = ok
			}
		}
	}
	all := make([]int64, 0, len(owner))
	for id := range owner {
		all = append(all, id)
	}
	slices.Sort(all)
	to = w.Cursor
	stopped := false
	for _, id := range all {
		if !owner[id] {
			stopped = true
			continue
		}
		rows = append(rows, id)
		if !stopped {
			to = id
		}
	}
	if !stopped && !w.Full {
		for k := range done {
			to = max(to, k.ID)
		}
	}
	return to, rows
}

// OutboxCursor returns the dispatcher's cursor: every msg_event row at or
// below it is done.
func (s *Store) OutboxCursor(ctx context.Context) (int64, error) {
	var at int64
	if err := s.pool.QueryRow(ctx, `SELECT delivered_id FROM msg_event_cursor`).Scan(&at); err != nil {
		return 0, fmt.Errorf("read the outbox cursor: %w", err)
	}
	return at, nil
}

// Park is a record refused by the broker for good: its row and kind.
type Park struct {
	ID    int64
	Kind  string
	Error string
}

// Advance is what a settled pass records, in one statement.
type Advance struct {
	// To moves the cursor up (never down): every row at or below To is
	// done. Zero leaves it.
	To int64
	// Parked records are listed in msg_event_parked (one attempt, their
	// error), whether or not the cursor passes them.
	Parked []Park
	// Delivered are the state events acknowledged by the broker: an older
	// parked state of the same flight is obsolete once a newer one is on
	// the topic, and leaves msg_event_parked.
	Delivered []OutboxEvent
}

// AdvanceCursor records a settled pass: the cursor moves up to a.To, the
// parked events are listed, and parked older states of the delivered
// flights are dropped from the list. It changes nothing and returns
// ErrFenced unless epoch is the current one in pipeline_lock, read in the
// same statement, so a deposed dispatcher can neither move the cursor nor
// park anything. It returns the number of parked entries dropped as
// superseded.
func (s *Store) AdvanceCursor(ctx context.Context, epoch int64, a Advance) (superseded int64, err error) {
	parkIDs, parkKinds, parkErrs := make([]int64, len(a.Parked)), make([]string, len(a.Parked)), make([]string, len(a.Parked))
	for i, p := range a.Parked {
		parkIDs[i], parkKinds[i], parkErrs[i] = p.ID, p.Kind, p.Error
	}
	var flids, versions []int64
	for _, e := range a.Delivered {
		if e.Kind == KindState {
			flids, versions = append(flids, int64(e.FLID)), append(versions, e.StateVersion) //nolint:gosec // 12 digits
		}
	}
	var current int64
	if len(a.Parked) == 0 {
		err = s.pool.QueryRow(ctx, advanceSQL, LockName, epoch, a.To, flids, versions).Scan(&current, &superseded)
	} else {
		err = s.pool.QueryRow(ctx, advanceParkingSQL, LockName, epoch, a.To, flids, versions, parkIDs, parkErrs, parkKinds).
			Scan(&current, &superseded)
	}
	if err != nil {
		return 0, fmt.Errorf("advance the outbox cursor to %d: %w", a.To, err)
	}
	if current != epoch {
		return 0, fmt.Errorf("advance the outbox cursor to %d: %w (mine %d, current %d)", a.To, ErrFenced, epoch, current)
	}
	return superseded, nil
}

// AdvanceCursor's statements: advanceSQL for a pass that parked nothing
// (every pass of a healthy stream), advanceParkingSQL for one that did.
// Both are fenced the same way and drop the superseded parked states the
// same way (the s CTE); the first has no insert into msg_event_parked at
// all, so a pass of one delivered record does not start one. Both run on
// their generic plans (the writer's sessions force them, see Open), which
// probe msg_event by its primary key for each parked record and drive the
// superseded delete from msg_event_parked's own rows, at any list length.
const (
	advanceHead = `
		WITH fence AS MATERIALIZED (
			SELECT 1 FROM pipeline_lock WHERE name = $1 AND epoch = $2
		), c AS (
			UPDATE msg_event_cursor SET delivered_id = $3, updated_at = now()
			WHERE delivered_id < $3 AND EXISTS (SELECT 1 FROM fence)
			RETURNING 1
		), s AS (
			DELETE FROM msg_event_parked k
			USING msg_event e, unnest($4::bigint[], $5::bigint[]) AS d(flid, v)
			WHERE cardinality($4::bigint[]) > 0 AND EXISTS (SELECT 1 FROM fence)
			  AND e.id = k.event_id AND k.kind = 'KAFKA_SCHD' AND e.flid = d.flid AND e.state_version < d.v
			RETURNING 1
		)%s
		SELECT (SELECT epoch FROM pipeline_lock WHERE name = $1), (SELECT count(*) FROM s)`
	advanceParks = `, p AS (
			INSERT INTO msg_event_parked (event_id, kind, last_error, attempts)
			SELECT u.id, u.kind, left(u.err, 1000), e.attempts + 1
			FROM unnest($6::bigint[], $7::text[], $8::text[]) AS u(id, err, kind) JOIN msg_event e ON e.id = u.id
			WHERE EXISTS (SELECT 1 FROM fence)
			ON CONFLICT (event_id, kind) DO NOTHING
			RETURNING 1
		)`
)

// A data-modifying CTE runs to completion whether or not the main query
// reads it, so neither c nor p is read.
var (
	advanceSQL        = fmt.Sprintf(advanceHead, "")
	advanceParkingSQL = fmt.Sprintf(advanceHead, advanceParks)
)

// MarkFailed counts one more failed attempt for each row (ids: the rows of
// the failed records; a row listed twice counts once) and keeps its error
// (errs[i] belongs to ids[i]). The events stay pending: a failed event
// is retried until delivered, never expired (processing rules R7.3). Rows the cursor
// passed are left alone. Fenced like AdvanceCursor: ErrFenced, and nothing changed, once epoch is superseded.
func (s *Store) MarkFailed(ctx context.Context, epoch int64, ids []int64, errs []string) error {
	if len(ids) == 0 {
		return nil
	}
	if len(errs) != len(ids) {
		return fmt.Errorf("mark outbox events failed: %d ids but %d errors", len(ids), len(errs))
	}
	var current int64
	err := s.pool.QueryRow(ctx, `
		WITH f AS (
			UPDATE msg_event e SET attempts = e.attempts + 1, last_error = left(u.err, 1000)
			FROM unnest($1::bigint[], $2::text[]) AS u(id, err)
			WHERE e.id = u.id AND e.id > (SELECT delivered_id FROM msg_event_cursor)
			  AND EXISTS (SELECT 1 FROM pipeline_lock WHERE name = $3 AND epoch = $4)
			RETURNING e.id
		)
		SELECT (SELECT epoch FROM pipeline_lock WHERE name = $3), (SELECT count(*) FROM f)`,
		ids, errs, LockName, epoch).Scan(&current, new(int64))
	if err != nil {
		return fmt.Errorf("mark %d outbox events failed: %w", len(ids), err)
	}
	if current != epoch {
		return fmt.Errorf("mark %d outbox events failed: %w (mine %d, current %d)", len(ids), ErrFenced, epoch, current)
	}
	return nil
}

// OutboxStats counts pending records (above the cursor, parked ones
// excepted: superseded-to-be states included) and returns the creation time
// of the oldest (zero when none is pending).
func (s *Store) OutboxStats(ctx context.Context) (pending int64, oldest time.Time, err error) {
	pending, _, oldest, err = s.OutboxFigures(ctx)
	return pending, oldest, err
}

// OutboxFigures counts pending records (the notices and states of the
// rows above the cursor, parked ones excepted: superseded-to-be states
// included) and parked ones, and returns the creation time of the oldest
// row with a pending record (zero when none is pending), in one statement.
func (s *Store) OutboxFigures(ctx context.Context) (pending, parked int64, oldest time.Time, err error) {
	var first *time.Time
	err = s.pool.QueryRow(ctx, `
		WITH p AS MATERIALIZED (
			SELECT e.created_at,
				(e.notice IS NOT NULL AND NOT EXISTS (
					SELECT 1 FROM msg_event_parked k WHERE k.event_id = e.id AND k.kind = 'KAFKA_MSG'))::int
				+ (e.state IS NOT NULL AND NOT EXISTS (
					SELECT 1 FROM msg_event_parked k WHERE k.event_id = e.id AND k.kind = 'KAFKA_SCHD'))::int AS records
			FROM msg_event e
			WHERE e.id > (SELECT delivered_id FROM msg_event_cursor)
		)
		SELECT (SELECT coalesce(sum(records), 0) FROM p), (SELECT count(*) FROM msg_event_parked),
			(SELECT min(created_at) FROM p WHERE records > 0)`).Scan(&pending, &parked, &first)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("count pending outbox events: %w", err)
	}
	if first != nil {
		oldest = *first
	}
	return pending, parked, oldest, nil
}
