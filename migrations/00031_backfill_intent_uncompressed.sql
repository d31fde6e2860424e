-- A batch's backfill intent holds the ids of its messages: a batch of a
-- thousand messages makes an 8 kB array, which PostgreSQL compressed
-- (pglz) before moving it out of line, about a millisecond of the
-- writing backend's CPU, and decompressed again when the mailbox carried
-- the results. The row lives only until then (seconds), so the space the
-- compression saved was given back at once: the array is now moved out of
-- line as it is (EXTERNAL storage). Small intents stay in the row as
-- before.
--
-- Only the catalog changes: rows already written keep their form.

-- +goose Up
ALTER TABLE backfill_todo ALTER COLUMN message_ids SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE backfill_todo ALTER COLUMN message_ids SET STORAGE EXTENDED;
