package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// PrefetchRequest names what a batch of messages will need to read.
type PrefetchRequest struct {
	// MessageIDs of the batch, for their processing states.
	MessageIDs []int64
	// IdentityKeys of the decoded messages, for re-sent copy detection,
	// looked up among messages received since Since.
	IdentityKeys []string
	Since        time.Time
	// FLIDs the batch's increments and deletions touch, and how many state
	// versions they may need at most.
	FLIDs    []flight.FLID
	Versions int
	// Cache, when set, holds states committed by this writer: flights in
	// it are checked by version instead of loaded.
	Cache *StateCache
}

// PriorCopy is the latest processed message with an identity key.
type PriorCopy struct {
	MessageID  int64
	Digest     []byte
	ReceivedAt time.Time
}

// Prefetch is everything a batch reads, fetched in one round trip.
type Prefetch struct {
	States map[int64]ProcState
	Priors map[string]PriorCopy
	Set    *WorkingSet
}

// Prefetch reads processing states, prior copies, the touched flights and
// a pool of state versions with one pipelined batch.
func (t *Tx) Prefetch(ctx context.Context, req PrefetchRequest) (*Prefetch, error) {
	b := &pgx.Batch{}
	// Both lookups probe their index once per key (LATERAL), whatever the
	// planner's statistics say: with a growing, not yet analyzed table a
	// plain "= ANY($1)" turned into scans that grew with the backlog.
	b.Queue(`SELECT p.message_id, p.status, coalesce(p.reason, ''), coalesce(p.note, ''), p.attempts, coalesce(p.finished_at, 'epoch'),
			p.received_at, p.payload_digest
		FROM unnest($1::bigint[]) AS k(id)
		CROSS JOIN LATERAL (SELECT * FROM proc_state WHERE message_id = k.id) p`, req.MessageIDs)
	b.Queue(`SELECT k.key, p.message_id, p.payload_digest, p.received_at
		FROM (SELECT DISTINCT key FROM unnest($1::text[]) AS u(key)) AS k
		CROSS JOIN LATERAL (SELECT message_id, payload_digest, received_at FROM proc_state
			WHERE identity_key = k.key AND received_at >= $2 AND status IN ('SUCCEEDED', 'DEAD')
			ORDER BY received_at DESC, message_id DESC LIMIT 1) p`, req.IdentityKeys, req.Since)
	b.Queue(takeVersionsSQL, req.Versions)
	load := newSetLoad(req.FLIDs, req.Cache)
	load.queue(b)

	out, err := t.readPrefetch(ctx, b, load)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readPrefetch sends the prefetch batch and reads it; flights whose cached
// version moved are reloaded after it is closed.
func (t *Tx) readPrefetch(ctx context.Context, b *pgx.Batch, load *setLoad) (*Prefetch, error) {
	br := t.tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	out := &Prefetch{States: map[int64]ProcState{}, Priors: map[string]PriorCopy{}}

	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("prefetch processing states: %w", err)
	}
	for rows.Next() {
		var id int64
		var p ProcState
		if err := rows.Scan(&id, &p.Status, &p.Reason, &p.Note, &p.Attempts, &p.Finished, &p.ReceivedAt, &p.Digest); err != nil {
			rows.Close()
			return nil, fmt.Errorf("prefetch processing states: %w", err)
		}
		out.States[id] = p
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("prefetch processing states: %w", err)
	}

	rows, err = br.Query()
	if err != nil {
		return nil, fmt.Errorf("prefetch prior copies: %w", err)
	}
	for rows.Next() {
		var key string
		var p PriorCopy
		if err := rows.Scan(&key, &p.MessageID, &p.Digest, &p.ReceivedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("prefetch prior copies: %w", err)
		}
		out.Priors[key] = p
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("prefetch prior copies: %w", err)
	}

	set, stale, err := t.readSet(br, load)
	if err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("prefetch: %w", err)
	}
	if err := t.reload(ctx, stale, set.base); err != nil {
		return nil, err
	}
	out.Set = set
	return out, nil
}

// LoadSet starts a new working set over flids with up to versions state
// versions (after a snapshot changed the database under the old one);
// flights in cache (may be nil) are checked by version instead of loaded.
func (t *Tx) LoadSet(ctx context.Context, flids []flight.FLID, versions int, cache *StateCache) (*WorkingSet, error) {
	b := &pgx.Batch{}
	b.Queue(takeVersionsSQL, versions)
	load := newSetLoad(flids, cache)
	load.queue(b)
	br := t.tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	set, stale, err := t.readSet(br, load)
	if err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("load flights: %w", err)
	}
	if err := t.reload(ctx, stale, set.base); err != nil {
		return nil, err
	}
	return set, nil
}

func (t *Tx) readSet(br pgx.BatchResults, load *setLoad) (*WorkingSet, []int64, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("take state versions: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, nil, fmt.Errorf("take state versions: %w", err)
	}
	states, stale, err := load.read(br)
	if err != nil {
		return nil, nil, err
	}
	w := &WorkingSet{tx: t, base: states, cur: map[flight.FLID]*flight.State{}, changed: map[flight.FLID][]string{},
		loaded: map[flight.FLID]bool{}, recycled: map[flight.FLID]bool{}, versions: versions}
	for _, f := range load.flids {
		w.loaded[f] = true
	}
	return w, stale, nil
}

// FinishBatch writes what a batch leaves after its messages were decided:
// the raw archive of its rows and every message's result with its backfill
// intent go out first, and the server writes them while the working set's
// state and events are put together here; those follow as a second batch.
// Two round trips, whatever the number of messages.
func (t *Tx) FinishBatch(ctx context.Context, archive []ArchivedRow, set *WorkingSet, results []Result) error {
	first := &pgx.Batch{}
	queueArchive(first, archive)
	t.queueResults(first, results)
	var sent pgx.BatchResults
	if first.Len() > 0 {
		sent = t.tx.SendBatch(ctx, first)
	}
	second := &pgx.Batch{}
	var queueErr error
	if set != nil {
		queueErr = set.queue(second)
	}
	if sent != nil {
		if err := readBatch(sent, first.Len()); err != nil {
			return fmt.Errorf("finish batch: archive and results: %w", err)
		}
	}
	if queueErr != nil {
		return queueErr
	}
	if err := t.sendBatch(ctx, second); err != nil {
		return fmt.Errorf("finish batch: state and events: %w", err)
	}
	if set != nil {
		set.written()
	}
	return nil
}

func queueArchive(b *pgx.Batch, rows []ArchivedRow) {
	if len(rows) == 0 {
		return
	}
	n := len(rows)
	ids, sizes := make([]int64, n), make([]int64, n)
	received := make([]time.Time, n)
	truncated := make([]bool, n)
	digests, bodies := make([][]byte, n), make([][]byte, n)
	for i, r := range rows {
		ids[i], sizes[i], received[i], truncated[i], digests[i], bodies[i] = r.MessageID, r.Size, r.ReceivedAt, r.Truncated, r.Digest, r.Body
		if digests[i] == nil {
			digests[i] = Digest(r.Body)
		}
		if bodies[i] == nil {
			bodies[i] = []byte{} // a NULL mailbox body is archived as empty
		}
	}
	b.Queue(`INSERT INTO msg_archive (message_id, received_at, byte_size, truncated, digest, body)
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::bool[], $5::bytea[], $6::bytea[])
		ON CONFLICT (message_id) DO NOTHING`, ids, received, sizes, truncated, digests, bodies)
}

// queueResults records many results at once (see RecordResult).
func (t *Tx) queueResults(b *pgx.Batch, results []Result) {
	if len(results) == 0 {
		return
	}
	n := len(results)
	ids, attempts := make([]int64, n), make([]int32, n)
	keys, types, styps, statuses, reasons, notes := make([]*string, n), make([]*string, n), make([]*string, n), make([]string, n), make([]*string, n), make([]*string, n)
	digests := make([][]byte, n)
	flags := make([]string, n)
	received := make([]time.Time, n)
	finished := make([]*time.Time, n)
	var bf []int64
	var bfResults, bfNotes []string
	for i, r := range results {
		ids[i], statuses[i], digests[i], received[i], attempts[i] = r.MessageID, r.Status, r.PayloadDigest, r.ReceivedAt, 1
		keys[i], types[i], styps[i] = nonEmpty(cleanText(r.IdentityKey)), nonEmpty(cleanText(r.Type)), nonEmpty(cleanText(r.Styp))
		reasons[i], notes[i] = nonEmpty(r.Reason), nonEmpty(cleanText(r.Note))
		flags[i] = pgTextArray(r.Flags)
		if r.terminal() {
			finished[i] = &t.now
			bf = append(bf, r.MessageID)
			bfResults = append(bfResults, r.Status)
			bfNotes = append(bfNotes, cleanText(r.Note))
		}
	}
	b.Queue(`INSERT INTO proc_state (message_id, identity_key, payload_digest, msg_type, msg_styp, status, reason, note,
			flags, attempts, received_at, first_seen_at, updated_at, finished_at)
		SELECT id, key, digest, typ, styp, status, reason, note, flags::text[], 1, received, $12, $12, finished
		FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::timestamptz[], $11::timestamptz[])
			AS u(id, key, digest, typ, styp, status, reason, note, flags, received, finished)
		ON CONFLICT (message_id) DO UPDATE SET
			identity_key = EXCLUDED.identity_key, payload_digest = EXCLUDED.payload_digest,
			msg_type = EXCLUDED.msg_type, msg_styp = EXCLUDED.msg_styp, status = EXCLUDED.status,
			reason = EXCLUDED.reason, note = EXCLUDED.note, flags = EXCLUDED.flags,
			attempts = proc_state.attempts + 1, updated_at = EXCLUDED.updated_at, finished_at = EXCLUDED.finished_at`,
		ids, keys, digests, types, styps, statuses, reasons, notes, flags, received, finished, t.now)
	if len(bf) > 0 {
		b.Queue(`INSERT INTO backfill_todo (message_id, result, note, processed_at)
			SELECT id, result, NULLIF(note, ''), $4 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, result, note)
			ON CONFLICT (message_id) DO UPDATE SET result = EXCLUDED.result, note = EXCLUDED.note, processed_at = EXCLUDED.processed_at`,
			bf, bfResults, bfNotes, t.now)
	}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// pgTextArray renders flags as a PostgreSQL array literal, so a list of
// lists can travel as one text[] parameter.
func pgTextArray(items []string) string {
	out := "{"
	for i, it := range items {
		if i > 0 {
			out += ","
		}
		out += `"` + escapeArrayItem(it) + `"`
	}
	return out + "}"
}

func escapeArrayItem(s string) string {
	r := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			r = append(r, '\\')
		}
		r = append(r, s[i])
	}
	return string(r)
}
