package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Trace log results (schd_snap_log.result).
const (
	TraceCommitted     = pumpdata.TraceCommitted
	TraceReplaySkipped = pumpdata.TraceReplaySkipped
	TraceRolledBack    = pumpdata.TraceRolledBack
	TraceCommitUnknown = pumpdata.TraceCommitUnknown
)

// TraceEntry is one snapshot attempt (processing rules R5.6).
type TraceEntry = pumpdata.TraceEntry

// MaxTraceConflicts bounds the conflicts one trace row keeps: a snapshot of
// thousands of misattributed records is named by its first ones.
const MaxTraceConflicts = pumpdata.MaxTraceConflicts

// DayConflict is one FLID a snapshot gave another operation day than the one
// its stored row has (processing rules R5.3, SAME_FLID_ACROSS_OPERATION_DAYS).
type DayConflict = pumpdata.DayConflict

// AppendTraceLog writes one trace row in its own transaction, outside the
// message's: it is written whatever the message's fate, and the caller
// must treat its failure as a metric only, never as the message's result.
func (s *Store) AppendTraceLog(ctx context.Context, e TraceEntry) error {
	flags := e.Flags
	if flags == nil {
		flags = []string{}
	}
	var conflicts []byte // NULL when none
	if len(e.Conflicts) > 0 {
		var err error
		if conflicts, err = json.Marshal(e.Conflicts[:min(len(e.Conflicts), MaxTraceConflicts)]); err != nil {
			return fmt.Errorf("append trace log for message %d: conflicts: %w", e.MessageID, err)
		}
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO schd_snap_log (operation_day, msg_id, recv_at, recs, old_version, new_version, deleted_count,
			result, flags, old_flid_digest, new_flid_digest, archive_key, duration_ms, detail, conflicts, result_if_committed)
		VALUES (NULLIF($1, '')::date, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), NULLIF($11, ''), $2, $12, NULLIF($13, ''), $14::jsonb,
			NULLIF($15, ''))`,
		e.Day, e.MessageID, e.ReceivedAt, e.Recs, e.OldVersion, e.NewVersion, e.DeletedCount,
		e.Result, flags, e.OldDigest, e.NewDigest, e.Duration.Milliseconds(), e.Detail, conflicts, e.IfCommitted)
	if err != nil {
		return fmt.Errorf("append trace log for message %d: %w", e.MessageID, err)
	}
	return nil
}

// ResolveCommitUnknown settles the trace rows of attempts whose COMMIT
// failed without the server's answer (COMMIT_UNKNOWN): an attempt committed
// when its message's processing state — or, for a mailbox id reused since,
// its predecessor's record in msg_id_reuse — is SUCCEEDED for the same
// received time and no later attempt of that message was traced (a message
// whose result committed is never applied again, only written back; one
// whose commit did not go through is retried, which is another attempt and
// another row). Such a row takes the result it kept for that case
// (result_if_committed), any other ROLLED_BACK; its detail says so. It
// returns how many rows it settled. Like every trace write it runs outside
// any message transaction and decides nothing.
func (s *Store) ResolveCommitUnknown(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		WITH doubt AS (
			SELECT l.id,
				(EXISTS (SELECT 1 FROM proc_state p
						WHERE p.message_id = l.msg_id AND p.received_at = l.recv_at AND p.status = 'SUCCEEDED')
					OR EXISTS (SELECT 1 FROM msg_id_reuse r
						WHERE r.message_id = l.msg_id AND r.old_received_at = l.recv_at AND r.old_status = 'SUCCEEDED'))
				AND NOT EXISTS (SELECT 1 FROM schd_snap_log n WHERE n.msg_id = l.msg_id AND n.recv_at = l.recv_at AND n.id > l.id)
					AS committed
			FROM schd_snap_log l WHERE l.result = 'COMMIT_UNKNOWN')
		UPDATE schd_snap_log l
		SET result = CASE WHEN d.committed THEN l.result_if_committed ELSE 'ROLLED_BACK' END,
			result_if_committed = NULL,
			detail = concat_ws('; ', l.detail, CASE WHEN d.committed
				THEN 'its commit failed without an answer; a later start found it committed'
				ELSE 'its commit failed without an answer; a later start found it not committed' END)
		FROM doubt d WHERE l.id = d.id`)
	if err != nil {
		return 0, fmt.Errorf("resolve trace rows of commits of unknown outcome: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
