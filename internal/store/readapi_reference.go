package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Reference data as the read API (refapi) and `flightfeed ref` read it;
// the pump writes it (pump_reference.go).

// ReferenceList is what is stored of one reference-data type (pumpdata).
type ReferenceList = pumpdata.ReferenceList

// ReferenceRecord is one stored reference-data record (pumpdata).
type ReferenceRecord = pumpdata.ReferenceRecord

// ErrNoReferenceRecord says a reference-data record is not stored.
var ErrNoReferenceRecord = errors.New("no such reference-data record")

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
