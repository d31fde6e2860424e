-- The dispatcher finds a flight's pending full states (the newest to send,
-- the older ones to supersede) by (flid, state_version) among PENDING
-- KAFKA_SCHD rows only. The old index keyed every PENDING row, notices
-- included, by (kind, flid, state_version): twice the entries, and a text
-- first column compared under the database's collation on every insert —
-- about a third of the cost of queueing an event. The new one holds only
-- what the queries look up, by integers.

-- +goose Up
CREATE INDEX msg_event_pending_state ON msg_event (flid, state_version) WHERE status = 'PENDING' AND kind = 'KAFKA_SCHD';
DROP INDEX msg_event_pending_flid;

-- +goose Down
CREATE INDEX msg_event_pending_flid ON msg_event (kind, flid, state_version) WHERE status = 'PENDING';
DROP INDEX msg_event_pending_state;
