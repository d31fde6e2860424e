package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// FinishBatch writes what a batch leaves after its messages were decided:
// the raw archive of its rows and every message's result with its backfill
// intent go out first, and the server writes them while the working set's
// state and events are put together here; those follow as a second batch.
// Two round trips, whatever the number of messages, when the batch is
// small; from copyRowsMin new messages (or events) up, their archive rows,
// results, events and history rows go by COPY instead, a few round trips
// more for a server that inserts them a page at a time (one WAL record per
// page instead of one per row, no arrays to build and unnest).
func (t *Tx) FinishBatch(ctx context.Context, archive []ArchivedRow, set *engine.WorkingSet, results []Result) error {
	large, archive := splitLarge(archive)
	if err := t.streamArchive(ctx, large); err != nil {
		if isUniqueViolation(err) {
			err = fmt.Errorf("%w: %w", ErrNotNew, err)
		}
		return fmt.Errorf("finish batch: %w", err)
	}
	first := &pgx.Batch{}
	queueArchive(first, archive)
	if err := t.finishResults(ctx, first, results); err != nil {
		return fmt.Errorf("finish batch: %w", err)
	}
	var sent pgx.BatchResults
	if first.Len() > 0 {
		sent = t.tx.SendBatch(ctx, first)
	}
	second := &pgx.Batch{}
	var queueErr error
	var copies []engine.Event
	if set != nil {
		copies, queueErr = queueSetCopying(second, set, t.store.loc, t.now, copyRowsMin)
	}
	if sent != nil {
		if err := readBatch(sent, first); err != nil {
			if isUniqueViolation(err) && anyNew(archive, results) {
				err = fmt.Errorf("%w: %w", ErrNotNew, err)
			}
			return fmt.Errorf("finish batch: archive and results: %w", err)
		}
	}
	if queueErr != nil {
		return queueErr
	}
	if err := t.sendBatch(ctx, second); err != nil {
		return fmt.Errorf("finish batch: state and events: %w", err)
	}
	if len(copies) > 0 {
		if err := t.copyBatchEvents(ctx, copies); err != nil {
			return fmt.Errorf("finish batch: %w", err)
		}
	}
	if set != nil {
		set.Written()
	}
	return nil
}

// copyRowsMin is the number of a batch's new rows of one kind (archive
// rows, results, events) from which FinishBatch sends them by COPY: a
// variable so tests can take either path with few messages.
var copyRowsMin = 64

// finishResults writes results with their backfill intent: the new ones by
// COPY when there are copyRowsMin of them or more (a message already
// recorded fails it, as the plain INSERT would, with ErrNotNew), the
// others queued in b as queueResults does.
func (t *Tx) finishResults(ctx context.Context, b *pgx.Batch, results []Result) error {
	fresh, others := splitNew(results, func(r Result) bool { return r.New })
	if len(fresh) < copyRowsMin {
		t.queueResults(b, results)
		return nil
	}
	if err := t.copyResults(ctx, fresh); err != nil {
		if isUniqueViolation(err) {
			err = fmt.Errorf("%w: %w", ErrNotNew, err)
		}
		return err
	}
	t.queueResultRows(b, others, resultUpsert)
	t.queueIntent(b, terminalIDs(results))
	return nil
}

// streamArchiveMin is the body size from which a new row is archived by
// streamArchive: a variable so tests can send small bodies that way.
var streamArchiveMin = 1 << 20

// splitLarge separates the new rows that streamArchive sends from the
// others, each in the original order: those with a body of
// streamArchiveMin bytes or more, or every new row when there are
// copyRowsMin of them or more.
func splitLarge(rows []ArchivedRow) (large, others []ArchivedRow) {
	if n := countNew(rows); n > 0 && n >= copyRowsMin {
		return splitNew(rows, func(r ArchivedRow) bool { return r.New })
	}
	return splitNew(rows, func(r ArchivedRow) bool { return r.New && len(r.Body) >= streamArchiveMin })
}

// countNew is how many rows are to be written as new.
func countNew(rows []ArchivedRow) int {
	n := 0
	for _, r := range rows {
		if r.New {
			n++
		}
	}
	return n
}

// copyBinaryHeader starts PostgreSQL's binary COPY format: signature, no
// flags, no header extension.
var copyBinaryHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// pgEpochMicros is 2000-01-01 UTC, where PostgreSQL's binary timestamps
// count from, in Unix microseconds.
const pgEpochMicros = 946_684_800_000_000

// streamArchive archives new rows with COPY in binary format, each body
// read straight from the row as it is sent: queued as a parameter, pgx
// would first encode it into its send buffer, a second copy of the largest
// thing the pump holds (31.5 MB for a full-day DNLD). Like queueArchive's
// plain INSERT, it fails on a message already archived.
func (t *Tx) streamArchive(ctx context.Context, rows []ArchivedRow) error {
	if len(rows) == 0 {
		return nil
	}
	parts := []io.Reader{bytes.NewReader(copyBinaryHeader)}
	field := func(b, v []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(v))) //nolint:gosec // at most maxMessageBytes
		return append(b, v...)
	}
	for _, r := range rows {
		digest := r.Digest
		if digest == nil {
			digest = PayloadDigest(r.Body)
		}
		truncated := byte(0)
		if r.Truncated {
			truncated = 1
		}
		b := binary.BigEndian.AppendUint16(nil, 6)
		b = field(b, binary.BigEndian.AppendUint64(nil, uint64(r.MessageID)))                            //nolint:gosec // a bigint's bits
		b = field(b, binary.BigEndian.AppendUint64(nil, uint64(r.ReceivedAt.UnixMicro()-pgEpochMicros))) //nolint:gosec // a bigint's bits
		b = field(b, binary.BigEndian.AppendUint64(nil, uint64(r.Size)))                                 //nolint:gosec // a bigint's bits
		b = field(b, []byte{truncated})
		b = field(b, digest)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Body))) //nolint:gosec // at most maxMessageBytes
		parts = append(parts, bytes.NewReader(b), bytes.NewReader(r.Body))
	}
	parts = append(parts, bytes.NewReader([]byte{0xff, 0xff}))
	tag, err := t.copyFrom(ctx, io.MultiReader(parts...),
		`COPY msg_archive (message_id, received_at, byte_size, truncated, digest, body) FROM STDIN (FORMAT binary)`)
	if err != nil {
		return fmt.Errorf("archive %d large messages: %w", len(rows), err)
	}
	if tag.RowsAffected() != int64(len(rows)) {
		return fmt.Errorf("archive %d large messages: %d rows written", len(rows), tag.RowsAffected())
	}
	return nil
}

// anyNew reports whether a row or result was to be written as new.
func anyNew(archive []ArchivedRow, results []Result) bool {
	return slices.ContainsFunc(archive, func(r ArchivedRow) bool { return r.New }) ||
		slices.ContainsFunc(results, func(r Result) bool { return r.New })
}

// queueArchive inserts the rows known to be new with a plain INSERT and
// the others with ON CONFLICT DO NOTHING (see ArchivedRow.New).
func queueArchive(b *pgx.Batch, rows []ArchivedRow) {
	fresh, others := splitNew(rows, func(r ArchivedRow) bool { return r.New })
	queueArchiveRows(b, fresh, "")
	queueArchiveRows(b, others, " ON CONFLICT (message_id) DO NOTHING")
}

// splitNew splits items into those new reports true for and the others,
// each in the original order. Both are sized first (a batch's items are
// a few hundred bytes each, and growing them was a twentieth of the
// pump's allocated bytes on a backlog); an empty one stays nil.
func splitNew[T any](items []T, isNew func(T) bool) (fresh, others []T) {
	n := 0
	for _, it := range items {
		if isNew(it) {
			n++
		}
	}
	if n > 0 {
		fresh = make([]T, 0, n)
	}
	if n < len(items) {
		others = make([]T, 0, len(items)-n)
	}
	for _, it := range items {
		if isNew(it) {
			fresh = append(fresh, it)
		} else {
			others = append(others, it)
		}
	}
	return fresh, others
}

func queueArchiveRows(b *pgx.Batch, rows []ArchivedRow, onConflict string) {
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
			digests[i] = PayloadDigest(r.Body)
		}
		if bodies[i] == nil {
			bodies[i] = []byte{} // a NULL mailbox body is archived as empty
		}
	}
	b.Queue(`INSERT INTO msg_archive (message_id, received_at, byte_size, truncated, digest, body)
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::bool[], $5::bytea[], $6::bytea[])`+onConflict,
		ids, received, sizes, truncated, digests, bodies)
}

// ArchivedRow is one mailbox row for the evidence layer.
type ArchivedRow = pumpdata.ArchivedRow

// PayloadDigest is the digest of a mailbox row's raw text: the archive's
// and the row's identity (with its id and received time). Re-sent copies
// are compared by Result.ContentDigest instead.
func PayloadDigest(body []byte) []byte { return pumpdata.PayloadDigest(body) }

// Processing statuses (proc_state.status, mailbox result column).
const (
	StatusSucceeded = pumpdata.StatusSucceeded
	StatusSkipped   = pumpdata.StatusSkipped
	StatusDead      = pumpdata.StatusDead
	StatusFailed    = pumpdata.StatusFailed
)

// Result is a message's processing outcome.
type Result = pumpdata.Result

// RecordResult writes the message's processing state and, for a terminal
// result, the backfill intent, inside the message's transaction (processing rules R10.2):
// a crash after commit leaves the intent to be retried, never lost. It is
// the one-message form of what FinishBatch writes for a batch.
func (t *Tx) RecordResult(ctx context.Context, r Result) error {
	b := &pgx.Batch{}
	t.queueResults(b, []Result{r})
	if err := t.sendBatch(ctx, b); err != nil {
		return fmt.Errorf("record result of message %d: %w", r.MessageID, err)
	}
	return nil
}

// queueResults records many results at once (see RecordResult): the new
// ones with plain INSERTs, the others as upserts (Result.New), and one
// backfill intent for all the terminal ones. A FAILED result (a retry to
// come) never replaces a terminal state, nor the state of another message
// that had the id (another received time): those stay as they are, so a
// FAILED (INFRA) recorded after a rollback cannot undo a committed result
// (processing rules R7.2: never downgrade a committed success).
func (t *Tx) queueResults(b *pgx.Batch, results []Result) {
	fresh, others := splitNew(results, func(r Result) bool { return r.New })
	t.queueResultRows(b, fresh, "")
	t.queueResultRows(b, others, resultUpsert)
	t.queueIntent(b, terminalIDs(results))
}

// resultUpsert is how a result that may exist already is written.
const resultUpsert = `
		ON CONFLICT (message_id) DO UPDATE SET
			identity_key = EXCLUDED.identity_key, payload_digest = EXCLUDED.payload_digest, content_digest = EXCLUDED.content_digest,
			msg_type = EXCLUDED.msg_type, msg_styp = EXCLUDED.msg_styp, status = EXCLUDED.status,
			reason = EXCLUDED.reason, note = EXCLUDED.note, flags = EXCLUDED.flags,
			attempts = proc_state.attempts + EXCLUDED.attempts, updated_at = EXCLUDED.updated_at, finished_at = EXCLUDED.finished_at
		WHERE EXCLUDED.status <> 'FAILED'
			OR (proc_state.status IN ('PENDING', 'FAILED') AND proc_state.received_at = EXCLUDED.received_at)`

// terminalIDs are the ids of the terminal results: one backfill intent
// names them all.
func terminalIDs(results []Result) []int64 {
	var terminal []int64
	for _, r := range results {
		if r.Terminal() {
			terminal = append(terminal, r.MessageID)
		}
	}
	return terminal
}

func (t *Tx) queueResultRows(b *pgx.Batch, results []Result, onConflict string) {
	if len(results) == 0 {
		return
	}
	n := len(results)
	ids, attempts := make([]int64, n), make([]int32, n)
	keys, types, styps, statuses, reasons, notes := make([]*string, n), make([]*string, n), make([]*string, n), make([]string, n), make([]*string, n), make([]*string, n)
	digests, contents := make([][]byte, n), make([][]byte, n)
	flags := make([]string, n)
	received := make([]time.Time, n)
	finished := make([]*time.Time, n)
	for i, r := range results {
		ids[i], statuses[i], digests[i], contents[i], received[i] = r.MessageID, r.Status, r.PayloadDigest, r.ContentDigest, r.ReceivedAt
		attempts[i] = int32(max(r.Attempts, 1)) //nolint:gosec // a count of attempts, far below 2^31
		keys[i], types[i], styps[i] = nonEmpty(cleanText(r.IdentityKey)), nonEmpty(cleanText(r.Type)), nonEmpty(cleanText(r.Styp))
		reasons[i], notes[i] = nonEmpty(r.Reason), nonEmpty(cleanText(r.Note))
		flags[i] = pgTextArray(r.Flags)
		if r.Terminal() {
			finished[i] = &t.now
		}
	}
	b.Queue(`INSERT INTO proc_state (message_id, identity_key, payload_digest, content_digest, msg_type, msg_styp, status, reason, note,
			flags, attempts, received_at, first_seen_at, updated_at, finished_at)
		SELECT id, key, digest, content, typ, styp, status, reason, note, flags::text[], attempts, received, $12, $12, finished
		FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::timestamptz[], $11::timestamptz[], $13::bytea[], $14::int[])
			AS u(id, key, digest, typ, styp, status, reason, note, flags, received, finished, content, attempts)`+onConflict,
		ids, keys, digests, types, styps, statuses, reasons, notes, flags, received, finished, t.now, contents, attempts)
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

// cleanText makes arbitrary bytes storable as PostgreSQL text: valid UTF-8,
// no NUL.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
