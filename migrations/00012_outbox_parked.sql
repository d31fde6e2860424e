-- The dispatcher parks an outbox event that the broker refuses for good
-- (record too large, invalid record): status PARKED with its error, its
-- attempts and the time it was parked (done_at). A parked event is no longer
-- retried and holds nothing back: a newer state of its flight supersedes it
-- once delivered. `flightfeed parked` lists parked events and
-- `flightfeed parked --redeliver` makes them PENDING again.
-- Additive: the status check only gains a value, and retention keeps
-- parked rows until they are re-delivered or superseded.

-- +goose Up
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check
    CHECK (status IN ('PENDING', 'DELIVERED', 'SUPERSEDED', 'PARKED'));
CREATE INDEX msg_event_parked ON msg_event (kind, flid, state_version) WHERE status = 'PARKED';

-- +goose Down
DROP INDEX msg_event_parked;
UPDATE msg_event SET status = 'PENDING', done_at = NULL WHERE status = 'PARKED';
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check
    CHECK (status IN ('PENDING', 'DELIVERED', 'SUPERSEDED'));
