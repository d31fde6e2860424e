package store

import (
	"context"
	"fmt"
	"time"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// ReusedID is a mailbox row whose id was processed before as another
// message (ProcState.Same said no).
type ReusedID = pumpdata.ReusedID

// RetireReusedIDs moves what the database knows of each id's predecessor
// (its processing state, its archived raw text, a backfill intent that
// never landed) into msg_id_reuse, so the new row is processed as a new
// message and nothing of the old one is lost. Two statements.
func (t *Tx) RetireReusedIDs(ctx context.Context, reused []ReusedID) error {
	if len(reused) == 0 {
		return nil
	}
	ids, received, digests := make([]int64, len(reused)), make([]time.Time, len(reused)), make([][]byte, len(reused))
	for i, r := range reused {
		ids[i], received[i], digests[i] = r.MessageID, r.Received, r.Digest
	}
	_, err := t.tx.Exec(ctx, `
		WITH k AS (SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bytea[]) AS u(id, received, digest)),
		old AS (DELETE FROM proc_state p USING k WHERE p.message_id = k.id
			RETURNING p.*, k.received AS new_received, k.digest AS new_digest),
		arch AS (DELETE FROM msg_archive a USING k WHERE a.message_id = k.id
			RETURNING a.message_id, a.byte_size, a.truncated, a.body)
		INSERT INTO msg_id_reuse (message_id, detected_at, new_received_at, new_payload_digest, old_received_at,
			old_payload_digest, old_identity_key, old_msg_type, old_msg_styp, old_status, old_reason, old_note, old_flags,
			old_finished_at, old_byte_size, old_truncated, old_body)
		SELECT old.message_id, $4, old.new_received, old.new_digest, old.received_at, old.payload_digest, old.identity_key,
			old.msg_type, old.msg_styp, old.status, old.reason, old.note, old.flags, old.finished_at,
			arch.byte_size, arch.truncated, arch.body
		FROM old LEFT JOIN arch USING (message_id)`, ids, received, digests, t.now)
	if err != nil {
		return fmt.Errorf("retire %d reused mailbox ids: %w", len(reused), err)
	}
	// The predecessors' intents must not write the new rows' results.
	if _, err := t.tx.Exec(ctx, clearIntents, ids); err != nil {
		return fmt.Errorf("retire %d reused mailbox ids: their backfill intents: %w", len(reused), err)
	}
	return nil
}
