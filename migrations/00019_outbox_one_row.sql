-- One outbox row per message effect (issue 29): a changed flight of a
-- message writes one msg_event row that carries its change notice (notice,
-- for the KAFKA_MSG topic) and, when it is the newest version of its FLID
-- among the messages written together, its full state or tombstone
-- (state, with event UPSERT or DELETE, for the KAFKA_SCHD topic). An older
-- version written in the same transaction carries no state: the
-- dispatcher would coalesce it away anyway. Either record may be absent
-- (a re-delivered parked record is a row of that record alone), never
-- both. kind and payload go: a row is no longer one record.
--
-- msg_event_parked names the parked record: its row (event_id) and its
-- kind (KAFKA_SCHD or KAFKA_MSG).
--
-- The id sequence steps by 2 from here on: the id below each new row is
-- never used, so Down can split a row in two records in place (its state
-- takes id - 1, its notice keeps id) with no renumbering, and the
-- dispatcher's cursor (msg_event_cursor.delivered_id, every row at or
-- below it done) keeps its meaning both ways. The first new id is past
-- every old id and the cursor, and the cursor only ever moves to a row's
-- id, so the free id below a row lies on the row's side of the cursor.
--
-- Up merges each old pair: a KAFKA_SCHD row directly followed (next id)
-- by the KAFKA_MSG row of the same message, flight and version — what the
-- old pump wrote — becomes one row with the notice's id (the state's id is
-- left free), when both lie on the same side of the cursor. A pair the
-- cursor splits (the state done, its notice pending) stays two rows, so
-- nothing done is sent again and nothing pending is lost; so do rows of
-- no pair (re-delivered copies). Parked entries follow their record.
-- Down splits every row that has both records again: state at id - 1,
-- notice at id (exactly the old pair for a merged one).

-- +goose Up
ALTER TABLE msg_event ADD COLUMN state text, ADD COLUMN notice text,
    ALTER COLUMN event DROP NOT NULL;
UPDATE msg_event SET notice = payload, event = NULL WHERE kind = 'KAFKA_MSG';
UPDATE msg_event SET state = payload WHERE kind = 'KAFKA_SCHD';

ALTER TABLE msg_event_parked ADD COLUMN kind text;
UPDATE msg_event_parked p SET kind = e.kind FROM msg_event e WHERE e.id = p.event_id;
DELETE FROM msg_event_parked WHERE kind IS NULL; -- its row was pruned
ALTER TABLE msg_event_parked ALTER COLUMN kind SET NOT NULL,
    ADD CONSTRAINT msg_event_parked_kind_check CHECK (kind IN ('KAFKA_SCHD', 'KAFKA_MSG')),
    DROP CONSTRAINT msg_event_parked_pkey, ADD PRIMARY KEY (event_id, kind);

CREATE TEMPORARY TABLE msg_event_pair ON COMMIT DROP AS
SELECT s.id AS state_id, s.next_id AS notice_id
FROM (SELECT id, kind, message_id, flid, state_version,
             lead(id) OVER (ORDER BY id) AS next_id
      FROM msg_event) s
JOIN msg_event n ON n.id = s.next_id
WHERE s.kind = 'KAFKA_SCHD' AND n.kind = 'KAFKA_MSG'
  AND n.message_id = s.message_id AND n.flid = s.flid AND n.state_version = s.state_version
  AND (s.id <= (SELECT delivered_id FROM msg_event_cursor)) = (n.id <= (SELECT delivered_id FROM msg_event_cursor));

UPDATE msg_event n SET state = s.state, event = s.event, attempts = greatest(n.attempts, s.attempts),
    last_error = coalesce(n.last_error, s.last_error), created_at = least(n.created_at, s.created_at)
FROM msg_event_pair p JOIN msg_event s ON s.id = p.state_id
WHERE n.id = p.notice_id;
UPDATE msg_event_parked k SET event_id = p.notice_id
FROM msg_event_pair p WHERE k.event_id = p.state_id;
DELETE FROM msg_event e USING msg_event_pair p WHERE e.id = p.state_id;

DROP INDEX msg_event_state;
ALTER TABLE msg_event DROP COLUMN kind, DROP COLUMN payload,
    DROP CONSTRAINT msg_event_event_check,
    ADD CONSTRAINT msg_event_event_check CHECK (event IN ('UPSERT', 'DELETE')),
    ADD CONSTRAINT msg_event_state_check CHECK ((state IS NULL) = (event IS NULL)),
    ADD CONSTRAINT msg_event_record_check CHECK (state IS NOT NULL OR notice IS NOT NULL);
-- A flight's newest state above the cursor (coalescing).
CREATE INDEX msg_event_state ON msg_event (flid, state_version) WHERE state IS NOT NULL;

ALTER SEQUENCE msg_event_id_seq INCREMENT BY 2;
SELECT setval('msg_event_id_seq', greatest(
    (SELECT last_value FROM msg_event_id_seq),
    (SELECT coalesce(max(id), 0) FROM msg_event),
    (SELECT delivered_id FROM msg_event_cursor)) + 1, true);

-- The records as the dispatcher sees them, one per line, as msg_event was
-- before (for operators and tests; the dispatcher reads msg_event).
CREATE VIEW msg_event_record AS
SELECT id, 'KAFKA_SCHD'::text AS kind, event, flid, state_version, operation_day, message_id,
       state AS payload, attempts, last_error, created_at
FROM msg_event WHERE state IS NOT NULL
UNION ALL
SELECT id, 'KAFKA_MSG'::text, 'NOTICE'::text, flid, state_version, operation_day, message_id,
       notice, attempts, last_error, created_at
FROM msg_event WHERE notice IS NOT NULL;

-- +goose Down
DROP VIEW msg_event_record;
ALTER SEQUENCE msg_event_id_seq INCREMENT BY 1;
ALTER TABLE msg_event ADD COLUMN kind text, ADD COLUMN payload text,
    DROP CONSTRAINT msg_event_record_check, DROP CONSTRAINT msg_event_state_check,
    DROP CONSTRAINT msg_event_event_check;

-- The state of a row with both records moves to the free id below it.
INSERT INTO msg_event (id, kind, event, flid, state_version, operation_day, message_id, payload,
    attempts, last_error, created_at)
SELECT id - 1, 'KAFKA_SCHD', event, flid, state_version, operation_day, message_id, state,
    attempts, last_error, created_at
FROM msg_event WHERE state IS NOT NULL AND notice IS NOT NULL;
UPDATE msg_event_parked k SET event_id = e.id - 1
FROM msg_event e
WHERE k.kind = 'KAFKA_SCHD' AND e.id = k.event_id AND e.state IS NOT NULL AND e.notice IS NOT NULL;
UPDATE msg_event SET kind = 'KAFKA_MSG', event = 'NOTICE', payload = notice, state = NULL
WHERE notice IS NOT NULL;
UPDATE msg_event SET kind = 'KAFKA_SCHD', payload = state WHERE state IS NOT NULL;

ALTER TABLE msg_event_parked DROP CONSTRAINT msg_event_parked_pkey, DROP COLUMN kind,
    ADD PRIMARY KEY (event_id);
DROP INDEX msg_event_state;
ALTER TABLE msg_event DROP COLUMN state, DROP COLUMN notice,
    ALTER COLUMN kind SET NOT NULL, ALTER COLUMN payload SET NOT NULL, ALTER COLUMN event SET NOT NULL,
    ADD CONSTRAINT msg_event_kind_check CHECK (kind IN ('KAFKA_SCHD', 'KAFKA_MSG')),
    ADD CONSTRAINT msg_event_event_check CHECK (event IN ('UPSERT', 'DELETE', 'NOTICE'));
CREATE INDEX msg_event_state ON msg_event (flid, state_version) WHERE kind = 'KAFKA_SCHD';
