-- The raw archive's retention index as a BRIN index, like the flight
-- history's: msg_archive_archived (a B-tree on archived_at) served only the
-- retention sweep's `DELETE … WHERE archived_at < $1`, and cost every
-- archived message one index record in the WAL (about 67 bytes, one of the
-- 14.7 records a FLOP wrote). Archive rows arrive in archived_at order (one
-- pump writes a feed), so a BRIN index finds the old ones as well at almost
-- no cost per insert.

-- +goose Up
DROP INDEX msg_archive_archived;
CREATE INDEX msg_archive_archived ON msg_archive USING brin (archived_at);

-- +goose Down
DROP INDEX msg_archive_archived;
CREATE INDEX msg_archive_archived ON msg_archive (archived_at);
