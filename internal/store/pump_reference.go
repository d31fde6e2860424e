package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Reference data: what the pump writes (ApplyReference, in a message's
// batch transaction) and what the read API and `flightfeed ref` read.

// ReferenceChange is one reference-data message's effect (pumpdata).
type ReferenceChange = pumpdata.ReferenceChange

// ReferenceList is what is stored of one reference-data type (pumpdata).
type ReferenceList = pumpdata.ReferenceList

// ReferenceRecord is one stored reference-data record (pumpdata).
type ReferenceRecord = pumpdata.ReferenceRecord

// ErrNoReferenceRecord says a reference-data record is not stored.
var ErrNoReferenceRecord = errors.New("no such reference-data record")

const (
	refDeleteOthers = `DELETE FROM ref_record WHERE kind = $1 AND NOT (key = ANY($2::text[]))`
	refDeleteKeys   = `DELETE FROM ref_record WHERE kind = $1 AND key = ANY($2::text[])`
	// A record repeated unchanged is not written: it keeps the message
	// that last changed it (and no dead tuple is made).
	refUpsert = `INSERT INTO ref_record (kind, key, doc, message_id, updated_at)
SELECT $1, k, d::jsonb, $4, $5 FROM unnest($2::text[], $3::text[]) AS u(k, d)
ON CONFLICT (kind, key) DO UPDATE SET doc = EXCLUDED.doc, message_id = EXCLUDED.message_id, updated_at = EXCLUDED.updated_at
WHERE ref_record.doc IS DISTINCT FROM EXCLUDED.doc`
	refList = `INSERT INTO ref_list (kind, last_message_id, updated_at, replaced_by, replaced_at)
VALUES ($1, $2, $3, CASE WHEN $4 THEN $2::bigint END, CASE WHEN $4 THEN $3::timestamptz END)
ON CONFLICT (kind) DO UPDATE SET last_message_id = EXCLUDED.last_message_id, updated_at = EXCLUDED.updated_at,
  replaced_by = COALESCE(EXCLUDED.replaced_by, ref_list.replaced_by), replaced_at = COALESCE(EXCLUDED.replaced_at, ref_list.replaced_at)`
)

// ApplyReference writes reference-data changes in order, in one round trip:
// a replacement deletes the type's records it does not carry and upserts
// the others, an upsert upserts, a deletion deletes its keys.
func (t *Tx) ApplyReference(ctx context.Context, changes []ReferenceChange) error {
	b := &pgx.Batch{}
	for _, c := range changes {
		docs := make([]string, len(c.Docs))
		for i, d := range c.Docs {
			docs[i] = string(d)
		}
		switch c.Op {
		case pumpdata.RefReplace:
			b.Queue(refDeleteOthers, c.Type, c.Keys)
			b.Queue(refUpsert, c.Type, c.Keys, docs, c.MessageID, t.now)
		case pumpdata.RefUpsert:
			b.Queue(refUpsert, c.Type, c.Keys, docs, c.MessageID, t.now)
		case pumpdata.RefDelete:
			b.Queue(refDeleteKeys, c.Type, c.Keys)
		default:
			return fmt.Errorf("reference data %s of message %d: operation %q", c.Type, c.MessageID, c.Op)
		}
		b.Queue(refList, c.Type, c.MessageID, t.now, c.Op == pumpdata.RefReplace)
	}
	if err := t.sendBatch(ctx, b); err != nil {
		return fmt.Errorf("apply reference data: %w", err)
	}
	return nil
}

// ReferenceLists reads what is stored of every reference-data type that
// has records or ever had a message, by type.
func (s *Store) ReferenceLists(ctx context.Context) ([]ReferenceList, error) {
	rows, err := s.pool.Query(ctx, `SELECT l.kind, coalesce(c.n, 0), l.last_message_id, l.updated_at,
  coalesce(l.replaced_by, 0), l.replaced_at
FROM ref_list l LEFT JOIN (SELECT kind, count(*) AS n FROM ref_record GROUP BY kind) c ON c.kind = l.kind
ORDER BY l.kind`)
	if err != nil {
		return nil, fmt.Errorf("read reference lists: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ReferenceList, error) {
		var l ReferenceList
		var replacedAt *time.Time
		err := r.Scan(&l.Type, &l.Records, &l.LastMessageID, &l.UpdatedAt, &l.ReplacedBy, &replacedAt)
		if replacedAt != nil {
			l.ReplacedAt = *replacedAt
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read reference lists: %w", err)
	}
	return out, nil
}

// ReferenceRecords reads up to limit records of a type in key order, from
// the first key after after ("" from the start): a page of the list.
func (s *Store) ReferenceRecords(ctx context.Context, typ, after string, limit int) ([]ReferenceRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, key, doc::text, message_id, updated_at FROM ref_record
WHERE kind = $1 AND key > $2 ORDER BY key LIMIT $3`, typ, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s records: %w", typ, err)
	}
	out, err := pgx.CollectRows(rows, scanReferenceRecord)
	if err != nil {
		return nil, fmt.Errorf("read %s records: %w", typ, err)
	}
	return out, nil
}

// ReferenceRecordByKey reads one record (ErrNoReferenceRecord when none).
func (s *Store) ReferenceRecordByKey(ctx context.Context, typ, key string) (ReferenceRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, key, doc::text, message_id, updated_at FROM ref_record WHERE kind = $1 AND key = $2`, typ, key)
	if err != nil {
		return ReferenceRecord{}, fmt.Errorf("read %s %q: %w", typ, key, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanReferenceRecord)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReferenceRecord{}, fmt.Errorf("%s %q: %w", typ, key, ErrNoReferenceRecord)
	}
	if err != nil {
		return ReferenceRecord{}, fmt.Errorf("read %s %q: %w", typ, key, err)
	}
	return r, nil
}

func scanReferenceRecord(r pgx.CollectableRow) (ReferenceRecord, error) {
	var rec ReferenceRecord
	var doc string
	err := r.Scan(&rec.Type, &rec.Key, &doc, &rec.MessageID, &rec.UpdatedAt)
	rec.Doc = []byte(doc)
	return rec, err
}
