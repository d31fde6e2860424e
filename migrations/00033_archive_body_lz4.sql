-- Every message's raw body is archived (msg_archive.body) in the
-- transaction that applies it. A body past about 2 kB is compressed
-- before the row is written, with the server's default method (pglz)
-- unless the column says otherwise: a full-day RESP of 9,999 flights
-- (2.2 MB) cost the writing backend 16–18 ms of pglz, a full-day DNLD
-- (31.5 MB) several hundred, in the snapshot's transaction. lz4 takes
-- 5 ms for that RESP at a lower ratio (the body stored in 248 kB
-- against 180 kB) and reads back faster (replay, verify). A FLOP's body
-- is below the size where either applies.
--
-- Only the catalog changes: bodies already archived keep their method
-- and stay readable. A server built without lz4 keeps pglz (the
-- statement is refused there, and the migration goes on without it).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE msg_archive ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: archived bodies stay compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE msg_archive ALTER COLUMN body SET COMPRESSION default;
