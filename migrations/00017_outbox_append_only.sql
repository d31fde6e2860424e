-- An append-only outbox (issue 29, SPEC §2): delivery no longer updates
-- msg_event rows. The dispatcher keeps one fenced cursor per feed (its
-- database): every row at or below delivered_id is done (delivered,
-- superseded by a newer state of its flight, or parked), every row above it
-- is pending. The cursor moves once per Kafka transaction, in a statement
-- that checks the dispatcher's epoch in pipeline_lock. Rows above it are
-- committed in id order: every writer of msg_event (the pump, a replay,
-- `flightfeed parked --redeliver`) holds the pipeline_lock row for its
-- transaction, so a lower id never commits after a higher one.
-- Parked events (refused by the broker for good) are listed in the narrow
-- msg_event_parked; `flightfeed parked --redeliver` inserts a copy as a new
-- outbox row and removes the entry. A failed attempt still counts on the
-- row (attempts, last_error): failures are rare, deliveries are not.
-- Up carries the rows over: the cursor stops below the first PENDING row
-- (the highest id with every row at or below it DELIVERED, SUPERSEDED or
-- PARKED; no row: the sequence's last value), PARKED rows are listed in
-- msg_event_parked; rows are kept. Down rebuilds the statuses: PARKED for
-- the listed ones, DELIVERED at or below the cursor, PENDING above.

-- +goose Up
CREATE TABLE msg_event_cursor (
    one              boolean     PRIMARY KEY DEFAULT true CHECK (one),
    delivered_id     bigint      NOT NULL CHECK (delivered_id >= 0),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO msg_event_cursor (delivered_id)
SELECT coalesce((SELECT min(id) - 1 FROM msg_event WHERE status = 'PENDING'),
                (SELECT max(id) FROM msg_event), 0);

-- The table takes the name of migration 12's index of PARKED rows.
DROP INDEX msg_event_parked;
CREATE TABLE msg_event_parked (
    event_id         bigint      PRIMARY KEY,
    last_error       text        NOT NULL,
    attempts         integer     NOT NULL DEFAULT 1 CHECK (attempts >= 0),
    parked_at        timestamptz NOT NULL DEFAULT now()
);
INSERT INTO msg_event_parked (event_id, last_error, attempts, parked_at)
SELECT id, coalesce(last_error, ''), attempts, done_at FROM msg_event WHERE status = 'PARKED';

-- Dropping the columns drops the status checks and the partial indexes on
-- them (msg_event_pending, msg_event_done, msg_event_pending_state).
ALTER TABLE msg_event DROP COLUMN status, DROP COLUMN done_at;
-- A flight's newest state above the cursor (coalescing).
CREATE INDEX msg_event_state ON msg_event (flid, state_version) WHERE kind = 'KAFKA_SCHD';

-- +goose Down
ALTER TABLE msg_event ADD COLUMN status text NOT NULL DEFAULT 'PENDING',
    ADD COLUMN done_at timestamptz;
UPDATE msg_event e SET status = 'PARKED', done_at = p.parked_at, last_error = p.last_error, attempts = p.attempts
FROM msg_event_parked p WHERE p.event_id = e.id;
UPDATE msg_event SET status = 'DELIVERED', done_at = now()
WHERE id <= (SELECT delivered_id FROM msg_event_cursor) AND status = 'PENDING';
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check
    CHECK (status IN ('PENDING', 'DELIVERED', 'SUPERSEDED', 'PARKED'));
ALTER TABLE msg_event ADD CONSTRAINT msg_event_check CHECK ((status = 'PENDING') = (done_at IS NULL));
DROP INDEX msg_event_state;
CREATE INDEX msg_event_pending ON msg_event (id) WHERE status = 'PENDING';
CREATE INDEX msg_event_done ON msg_event (done_at) WHERE status <> 'PENDING';
CREATE INDEX msg_event_pending_state ON msg_event (flid, state_version) WHERE status = 'PENDING' AND kind = 'KAFKA_SCHD';
DROP TABLE msg_event_parked;
DROP TABLE msg_event_cursor;
CREATE INDEX msg_event_parked ON msg_event (kind, flid, state_version) WHERE status = 'PARKED';
