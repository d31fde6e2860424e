-- An outbox row carries the received time of the message that queued it
-- (the mailbox's DATE_RECEIVED, as its processing row and its history row
-- hold it), written with the row: the dispatcher's read of the pending
-- window reported it for each record by looking up the message's
-- processing row (proc_state), one index lookup per record and about a
-- fifth of that read's CPU. Rows written before this migration hold NULL,
-- and the window looks their processing row up as before.
--
-- Adding a nullable column without a default changes only the catalog:
-- no row is rewritten, the table's lock is held for an instant.

-- +goose Up
ALTER TABLE msg_event ADD COLUMN received_at timestamptz;

-- +goose Down
ALTER TABLE msg_event DROP COLUMN received_at;
