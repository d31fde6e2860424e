package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// ErrNoFlight says a flight is unknown to the database: it has no
// history, is not in current state and was never moved to history.
var ErrNoFlight = errors.New("no such flight")

// ChangeKindUpsert is the kind of a change that created or changed a
// flight (FlightChange.Kind); the others delete it.
const ChangeKindUpsert = "UPSERT"

// FlightChange is one new state of a flight as its history records it:
// the message that made it (id, SIS TYPE and STYP, received time, its
// processing result), when the transaction committed it, the state
// version before and after, and what changed.
type FlightChange struct {
	MessageID  int64     `json:"message_id"`
	Type       string    `json:"type,omitempty"`
	Styp       string    `json:"styp,omitempty"`
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// CommittedAt is the writing transaction's time.
	CommittedAt time.Time `json:"committed_at"`
	// Result and Reason are the message's processing state (proc_state),
	// absent once the message is no longer known (a lifecycle job's change
	// has none).
	Result string `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Kind is UPSERT (created or changed), DELETE (an FDEL), VICTIM (a
	// full-day snapshot no longer listed it) or HISTORY (moved to history).
	Kind string `json:"kind"`
	// Day is the flight's operation day at the change, absent while none.
	Day string `json:"operation_day,omitempty"`
	// FromVersion is the flight's state version before the change: its
	// previous history row's (0 when the history holds none: the flight
	// is new, or older rows were pruned or predate the history).
	FromVersion int64 `json:"from_version,omitempty"`
	Version     int64 `json:"version"`
	// Changes are the fields the change set, cleared or replaced, with old
	// and new values as the canonical document shows them; none for a
	// deletion.
	Changes []flight.FieldChange `json:"changes"`
}

// HistoryFilter narrows a flight's history: changes on operation day Day
// ("" any), committed at or after Since (zero: any), with a state version
// above After (a page's cursor: the last version listed), at most Limit
// (0: no limit; ask for one more than a page to learn whether another
// follows).
type HistoryFilter struct {
	Day   string
	Since time.Time
	After int64
	Limit int
}

// FlightHistory lists the changes of flid that f selects, oldest first
// (state version ascending), in one consistent read. A flight the
// database knows nothing of is ErrNoFlight; a known one whose filter
// selects nothing is an empty list.
func (s *Store) FlightHistory(ctx context.Context, flid flight.FLID, f HistoryFilter) ([]FlightChange, error) {
	var out []FlightChange
	id := int64(flid) //nolint:gosec // at most 12 digits
	limit := any(nil)
	if f.Limit > 0 {
		limit = f.Limit
	}
	err := s.readOnly(ctx, func(tx pgx.Tx) error {
		// The previous version is the flight's previous history row (the
		// primary key's range), so a deletion, whose state the engine
		// never loads, has one too.
		rows, err := tx.Query(ctx, `SELECT c.message_id, coalesce(p.msg_type, ''), coalesce(p.msg_styp, ''), c.received_at,
				c.committed_at, coalesce(p.status, ''), coalesce(p.reason, ''), c.kind, coalesce(c.operation_day::text, ''),
				coalesce((SELECT max(b.state_version) FROM flight_change b WHERE b.flid = c.flid AND b.state_version < c.state_version), 0),
				c.state_version, c.changes
			FROM flight_change c
			LEFT JOIN proc_state p ON p.message_id = c.message_id AND p.received_at = c.received_at
			WHERE c.flid = $1 AND c.state_version > $2 AND ($3 = '' OR c.operation_day = $3::date)
				AND ($4::timestamptz IS NULL OR c.committed_at >= $4)
			ORDER BY c.state_version LIMIT $5`, id, f.After, f.Day, nullTime(ceilMicrosecond(f.Since)), limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (FlightChange, error) {
			var c FlightChange
			var received *time.Time
			var changes []byte
			if err := r.Scan(&c.MessageID, &c.Type, &c.Styp, &received, &c.CommittedAt, &c.Result, &c.Reason, &c.Kind, &c.Day,
				&c.FromVersion, &c.Version, &changes); err != nil {
				return c, err
			}
			if received != nil {
				c.ReceivedAt = *received
			}
			c.Changes = []flight.FieldChange{}
			if err := json.Unmarshal(changes, &c.Changes); err != nil {
				return c, fmt.Errorf("version %d: changes: %w", c.Version, err)
			}
			return c, nil
		})
		if err != nil || len(out) > 0 {
			return err
		}
		var known bool
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM flight_change WHERE flid = $1)
			OR EXISTS (SELECT 1 FROM flight_schd WHERE flid = $1)
			OR EXISTS (SELECT 1 FROM flight_history WHERE flid = $1)`, id).Scan(&known)
		if err == nil && !known {
			return ErrNoFlight
		}
		return err
	})
	if errors.Is(err, ErrNoFlight) {
		return nil, fmt.Errorf("history of flight %s: %w", flid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read history of flight %s: %w", flid, err)
	}
	return out, nil
}
