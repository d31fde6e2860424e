package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// PrefetchRequest names what a batch of messages will need to read.
type PrefetchRequest = pumpdata.PrefetchRequest

// PriorCopy is the latest processed message with an identity key.
type PriorCopy = pumpdata.PriorCopy

// Prefetched is everything a batch reads, fetched in one round trip.
type Prefetched = pumpdata.Prefetched

// Prefetch reads processing states, prior copies, the touched flights and
// a pool of state versions with one pipelined batch.
func (t *Tx) Prefetch(ctx context.Context, req PrefetchRequest) (*Prefetched, error) {
	b := &pgx.Batch{}
	// Both lookups probe their index once per key (LATERAL), whatever the
	// planner's statistics say: with a growing, not yet analyzed table a
	// plain "= ANY($1)" turned into scans that grew with the backlog.
	b.Queue(`SELECT p.message_id, p.status, coalesce(p.reason, ''), coalesce(p.note, ''), p.attempts, coalesce(p.finished_at, 'epoch'),
			p.received_at, p.payload_digest
		FROM unnest($1::bigint[]) AS k(id)
		CROSS JOIN LATERAL (SELECT * FROM proc_state WHERE message_id = k.id) p`, req.MessageIDs)
	b.Queue(`SELECT k.key, p.message_id, p.content_digest, p.received_at
		FROM (SELECT DISTINCT key FROM unnest($1::text[]) AS u(key)) AS k
		CROSS JOIN LATERAL (SELECT message_id, content_digest, received_at FROM proc_state
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
func (t *Tx) readPrefetch(ctx context.Context, b *pgx.Batch, load *setLoad) (*Prefetched, error) {
	br := t.tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	out := &Prefetched{States: map[int64]ProcState{}, Priors: map[string]PriorCopy{}}

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

	set, err := t.readSetAndClose(ctx, br, load, "prefetch")
	if err != nil {
		return nil, err
	}
	out.Set = set
	return out, nil
}

// ProcState is what proc_state knows about one mailbox row.
type ProcState = pumpdata.ProcState
