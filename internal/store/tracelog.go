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
)

// TraceEntry is one snapshot attempt (seed 000 §5.6).
type TraceEntry = pumpdata.TraceEntry

// MaxTraceConflicts bounds the conflicts one trace row keeps: a snapshot of
// thousands of misattributed records is named by its first ones.
const MaxTraceConflicts = pumpdata.MaxTraceConflicts

// DayConflict is one FLID a snapshot gave another operation day than the one
// its stored row has (seed 000 §5.3, SAME_FLID_ACROSS_OPERATION_DAYS).
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
			result, flags, old_flid_digest, new_flid_digest, archive_key, duration_ms, detail, conflicts)
		VALUES (NULLIF($1, '')::date, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), NULLIF($11, ''), $2, $12, NULLIF($13, ''), $14::jsonb)`,
		e.Day, e.MessageID, e.ReceivedAt, e.Recs, e.OldVersion, e.NewVersion, e.DeletedCount,
		e.Result, flags, e.OldDigest, e.NewDigest, e.Duration.Milliseconds(), e.Detail, conflicts)
	if err != nil {
		return fmt.Errorf("append trace log for message %d: %w", e.MessageID, err)
	}
	return nil
}
