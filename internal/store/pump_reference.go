package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Reference data as the pump writes it (ApplyReference, in a message's
// batch transaction); the read API and `flightfeed ref` read it
// (readapi_reference.go).

// ReferenceChange is one reference-data message's effect (pumpdata).
type ReferenceChange = pumpdata.ReferenceChange

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
