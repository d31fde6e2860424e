-- One backfill intent per batch (issue 29, SPEC §2.2): a batch's transaction
-- registers one row holding the ids of its terminal messages instead of one
-- row per message, and the row is deleted once the mailbox carries their
-- results. The result and note written back are the message's own
-- (proc_state.status and proc_state.note, which the same transaction
-- writes, and which a replay updates before it registers its intent); the
-- intent keeps only the time written to DATE_PROCESSED, shared by the
-- batch. A message id may be in more than one intent (a replay of a
-- message whose write-back is still pending): it is written back once,
-- with the latest time.
-- Up carries the per-message rows over: one intent per processed_at (the
-- rows a batch registered share it), attempts and last error of its most
-- tried row. Down splits each intent into per-message rows again, result
-- and note from proc_state (an id without processing state cannot be
-- written back either way: its received time is unknown).

-- +goose Up
ALTER TABLE backfill_todo RENAME TO backfill_todo_v13;
ALTER INDEX backfill_todo_pkey RENAME TO backfill_todo_v13_pkey;
CREATE TABLE backfill_todo (
    batch_id         bigserial   PRIMARY KEY,
    message_ids      bigint[]    NOT NULL CHECK (cardinality(message_ids) > 0),
    processed_at     timestamptz NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO backfill_todo (message_ids, processed_at, attempts, last_error, created_at)
SELECT array_agg(message_id ORDER BY message_id), processed_at, max(attempts),
       (array_agg(last_error ORDER BY attempts DESC, message_id))[1], min(created_at)
FROM backfill_todo_v13
GROUP BY processed_at
ORDER BY min(message_id);
DROP TABLE backfill_todo_v13;

-- +goose Down
ALTER TABLE backfill_todo RENAME TO backfill_todo_v14;
ALTER INDEX backfill_todo_pkey RENAME TO backfill_todo_v14_pkey;
CREATE TABLE backfill_todo (
    message_id       bigint      PRIMARY KEY,
    result           text        NOT NULL CHECK (result IN ('SUCCEEDED', 'SKIPPED', 'DEAD', 'FAILED')),
    note             text,
    processed_at     timestamptz NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO backfill_todo (message_id, result, note, processed_at, attempts, last_error, created_at)
SELECT DISTINCT ON (m.id) m.id, p.status, p.note, b.processed_at, b.attempts, b.last_error, b.created_at
FROM backfill_todo_v14 b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id)
JOIN proc_state p ON p.message_id = m.id
WHERE p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD', 'FAILED')
ORDER BY m.id, b.processed_at DESC;
DROP TABLE backfill_todo_v14;
